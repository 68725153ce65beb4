"""FileStorage: the object store's Django storage (STORAGES["files"]), django-storages'
S3Storage plus the public endpoint presigned URLs are signed for and the credentials they are
signed with. The gateway (storage_service.objectstore) is its only user."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import boto3
from botocore.credentials import Credentials
from django.core.exceptions import ImproperlyConfigured
from storages.backends.s3 import S3Storage

from storage_service import sigv4

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class FileStorage(S3Storage):
    """django-storages' S3Storage, plus the public endpoint and the signing credentials.

    The service may reach the store at one address (a private network) and clients at another
    (a public host name). A presigned URL is only valid for the host it was signed for, so
    presigned URLs come from a second storage of the same options addressed at
    ``public_endpoint_url`` (its boto3 clients have the same credentials, region, addressing
    style and config; botocore derives scheme, port and bucket addressing from the endpoint),
    while every call the service makes goes to ``endpoint_url``. django-storages' own
    ``custom_domain`` is no help here: it rewrites the host of an unsigned URL (its only signer
    is CloudFront's), which an S3 store refuses.
    """

    def get_default_settings(self) -> dict[str, Any]:
        # None: clients reach the store where the service does.
        return {**super().get_default_settings(), "public_endpoint_url": None}

    @cached_property
    def public(self) -> FileStorage:
        """The storage presigned URLs are made by: this one when clients reach the store where
        the service does, else the same options addressed at the public endpoint. Made once;
        django-storages gives it a client per thread, as it does this one."""
        if not self.public_endpoint_url or self.public_endpoint_url == self.endpoint_url:
            return self
        options = {name: getattr(self, name) for name in self.get_default_settings()}
        return FileStorage(
            **{**options, "endpoint_url": self.public_endpoint_url, "public_endpoint_url": None},
            cloudfront_signer=self.cloudfront_signer,
        )

    def url(
        self,
        name: str,
        parameters: dict[str, Any] | None = None,
        expire: int | None = None,
        http_method: str | None = None,
    ) -> str:
        """A presigned GET (django-storages' url()) valid at the public endpoint."""
        if self.public is self:
            return str(super().url(name, parameters, expire, http_method))
        return self.public.url(name, parameters, expire, http_method)

    @property
    def client(self) -> S3Client:
        """The boto3 client the storage holds: its bucket's, made once and shared by every
        thread (botocore clients are thread-safe), where ``connection`` makes one per thread."""
        return cast("S3Client", self.bucket.meta.client)

    @cached_property
    def credentials(self) -> Credentials:
        """The credentials URLs are signed with, as botocore resolves them from the storage's
        options the way django-storages' clients do: its keys (and session token) when given,
        its profile, or else botocore's default chain (the AWS_* environment variables, the
        shared files' profile, web identity such as EKS's IRSA, the container's or instance's
        role, SSO). Temporary credentials come back refreshable: botocore renews them before
        they expire, at the signing that finds them close to it."""
        if self.session_profile:
            session = boto3.Session(profile_name=self.session_profile)
        else:
            session = boto3.Session(
                aws_access_key_id=self.access_key,
                aws_secret_access_key=self.secret_key,
                aws_session_token=self.security_token,
            )
        credentials = session.get_credentials()
        if credentials is None:
            raise ImproperlyConfigured(
                "No credentials for the object store: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, or give the process a role (docs/operations.md)."
            )
        return credentials

    @cached_property
    def signing_scope(self) -> sigv4.Scope:
        """What the in-process signer needs, asked of botocore once per storage: the public
        URL of an object minus its key (scheme, host, port and addressing style exactly as
        botocore builds them for any endpoint and bucket), the region and the credentials."""
        probe = "k"
        url = self.public.unsigned_connection.meta.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket_name, "Key": probe}, ExpiresIn=60
        )
        base = url.split("?", 1)[0]
        if not base.endswith("/" + probe):
            raise ImproperlyConfigured(f"unexpected presigned URL shape: {base}")
        return sigv4.Scope(
            object_url_prefix=base[: -len(probe)],
            region=str(self.region_name or self.client.meta.region_name),
            credentials=self.credentials,
        )
