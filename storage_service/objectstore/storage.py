"""FileStorage: the object store's Django storage (STORAGES["files"]), django-storages'
S3Storage plus the public endpoint presigned URLs are signed for and the credentials they are
signed with. The gateway (storage_service.objectstore) is its only user."""

from __future__ import annotations

import weakref
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import boto3
from botocore.credentials import Credentials
from botocore.regions import EndpointResolverBuiltins
from django.core.exceptions import ImproperlyConfigured
from storages.backends.s3 import S3Storage

from storage_service import sigv4

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

SDK_ENDPOINT = EndpointResolverBuiltins.SDK_ENDPOINT.value
# The handler's id for botocore's event system: registering it again on a client is a no-op.
PUBLIC_ENDPOINT_HANDLER = "storage-service-public-endpoint"


class FileStorage(S3Storage):
    """django-storages' S3Storage, plus the public endpoint and the signing credentials.

    The service may reach the store at one address (a private network) and clients at another
    (a public host name). A presigned URL is only valid for the host it was signed for, so
    presigned requests are resolved against ``public_endpoint_url`` while every call the
    service makes goes to ``endpoint_url``, all through the one client. django-storages' own
    ``custom_domain`` is no help here: it rewrites the host of an unsigned URL (its only signer
    is CloudFront's), which an S3 store refuses.
    """

    def get_default_settings(self) -> dict[str, Any]:
        # None: clients reach the store where the service does.
        return {**super().get_default_settings(), "public_endpoint_url": None}

    @cached_property
    def _public_endpoint_clients(self) -> weakref.WeakSet[Any]:
        # The clients (one per thread and kind, django-storages') already resolving
        # presigned requests against the public endpoint.
        return weakref.WeakSet()

    def _for_public_endpoint(self, connection: Any) -> Any:
        client = connection.meta.client
        public = self.public_endpoint_url
        if public and public != self.endpoint_url and client not in self._public_endpoint_clients:
            client.meta.events.register(
                "before-endpoint-resolution.s3",
                self._presign_for_public_endpoint,
                unique_id=PUBLIC_ENDPOINT_HANDLER,
            )
            self._public_endpoint_clients.add(client)
        return connection

    @property
    def connection(self) -> Any:
        return self._for_public_endpoint(super().connection)

    @property
    def unsigned_connection(self) -> Any:
        return self._for_public_endpoint(super().unsigned_connection)

    def _presign_for_public_endpoint(
        self, builtins: dict[str, Any], context: dict[str, Any], **kwargs: Any
    ) -> None:
        # botocore resolves each request's URL from these builtins, presigned ones included
        # (marked in their context); the scheme, port and addressing style follow from it.
        if context.get("is_presign_request"):
            builtins[SDK_ENDPOINT] = self.public_endpoint_url

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
        url = self.unsigned_connection.meta.client.generate_presigned_url(
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
