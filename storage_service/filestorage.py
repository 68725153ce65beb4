"""The object store as a Django storage: django-storages' S3Storage, plus the public endpoint.

The service may reach the store at one address (a private network) and clients at another
(a public host name). A presigned URL is only valid for the host it was signed for, so
presigned requests are resolved against ``public_endpoint_url`` while every call the service
makes goes to ``endpoint_url``, all through the one client. django-storages' own
``custom_domain`` is no help here: it rewrites the host of an unsigned URL (its only signer is
CloudFront's), which an S3 store refuses.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

from botocore.regions import EndpointResolverBuiltins
from django.core.exceptions import ImproperlyConfigured
from storages.backends.s3 import S3Storage

from storage_service import sigv4

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

SDK_ENDPOINT = EndpointResolverBuiltins.SDK_ENDPOINT.value


class FileStorage(S3Storage):
    def get_default_settings(self) -> dict[str, Any]:
        # None: clients reach the store where the service does.
        return {**super().get_default_settings(), "public_endpoint_url": None}

    @property
    def connection(self) -> Any:
        connection = getattr(self._connections, "connection", None)
        if connection is None:  # one per thread (django-storages'), each resolved like this
            connection = super().connection
            if self.public_endpoint_url and self.public_endpoint_url != self.endpoint_url:
                connection.meta.client.meta.events.register(
                    "before-endpoint-resolution.s3", self._presign_for_public_endpoint
                )
        return connection

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
    def signing_scope(self) -> sigv4.Scope:
        """What the in-process signer needs, asked of botocore once per storage: the public
        URL of an object minus its key (scheme, host, port and addressing style exactly as
        botocore builds them for any endpoint and bucket), the region and the keys."""
        if not (self.access_key and self.secret_key):
            raise ImproperlyConfigured("The object store needs access_key and secret_key.")
        probe = "k"
        url = self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket_name, "Key": probe}, ExpiresIn=60
        )
        base = url.split("?", 1)[0]
        if not base.endswith("/" + probe):
            raise ImproperlyConfigured(f"unexpected presigned URL shape: {base}")
        return sigv4.Scope(
            object_url_prefix=base[: -len(probe)],
            region=str(self.region_name or self.client.meta.region_name),
            access_key=str(self.access_key),
            secret_key=str(self.secret_key),
        )
