"""The object store's configuration: STORAGES["files"] (object_store()), read from the AWS_*
variables, with the per-call timeouts and attempts of every store call."""

from __future__ import annotations

from typing import Any, Literal, cast

from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from django.core.exceptions import ImproperlyConfigured

from storage_service.env import env_int, env_str

# The settings (base.py takes them as its own); the functions are imported by name.
__all__ = [
    "SERVICE_STORE_CONNECT_TIMEOUT_SECONDS",
    "SERVICE_STORE_MAX_ATTEMPTS",
    "SERVICE_STORE_READ_TIMEOUT_SECONDS",
]

# One object-store call: connect, then each socket read, each attempt (botocore "standard"
# retries, max_attempts counts the first). A store that accepts and never answers costs
# SERVICE_STORE_MAX_ATTEMPTS x (connect + read) seconds, then 503 STORAGE_UNAVAILABLE.
SERVICE_STORE_CONNECT_TIMEOUT_SECONDS = env_int(
    "SERVICE_STORE_CONNECT_TIMEOUT_SECONDS", 3, minimum=1
)
SERVICE_STORE_READ_TIMEOUT_SECONDS = env_int("SERVICE_STORE_READ_TIMEOUT_SECONDS", 10, minimum=1)
SERVICE_STORE_MAX_ATTEMPTS = env_int("SERVICE_STORE_MAX_ATTEMPTS", 2, minimum=1, maximum=10)
# Read here, used only in object_store() below: STORAGES["files"] is the one configuration.
_STORE_ENDPOINT_URL = env_str("AWS_S3_ENDPOINT_URL", "") or None
# Where clients reach the store, when that differs from where the service reaches it (a
# store on a private network behind a public hostname). Presigned URLs are signed for it.
_STORE_PUBLIC_ENDPOINT_URL = env_str("AWS_S3_PUBLIC_ENDPOINT_URL", "") or _STORE_ENDPOINT_URL
_STORE_REGION = env_str("AWS_S3_REGION_NAME", "us-east-1")
_addressing_style = env_str("AWS_S3_ADDRESSING_STYLE", "path")
if _addressing_style not in {"path", "virtual", "auto"}:
    raise ImproperlyConfigured("AWS_S3_ADDRESSING_STYLE must be path, virtual or auto")
_STORE_ADDRESSING_STYLE = cast(Literal["path", "virtual", "auto"], _addressing_style)
_STORE_BUCKET = env_str("AWS_STORAGE_BUCKET_NAME", "storage")


def object_store(
    *,
    access_key: str | None = None,
    secret_key: str | None = None,
    session_token: str | None = None,
) -> dict[str, Any]:
    """STORAGES["files"]: the object store, as django-storages' S3Storage (with the public
    endpoint presigned URLs are signed for: storage_service/objectstore/storage.py).

    With no keys, botocore's default chain finds the credentials (the AWS_* variables, a
    profile, web identity, the container's or instance's role, SSO) and refreshes temporary
    ones; every option is given here, so django-storages reads no credentials of its own.
    """
    return {
        "BACKEND": "storage_service.objectstore.storage.FileStorage",
        "OPTIONS": {
            "bucket_name": _STORE_BUCKET,
            "endpoint_url": _STORE_ENDPOINT_URL,
            "public_endpoint_url": _STORE_PUBLIC_ENDPOINT_URL,
            "region_name": _STORE_REGION,
            "access_key": access_key,
            "secret_key": secret_key,
            "security_token": session_token,
            "session_profile": None,
            # Every call ends within the API's own budget ("Locks and timeouts" in base.py):
            # botocore's defaults (3 attempts of up to 60 s reads) outlast the API's request
            # timeout, so a hung store would kill the worker instead of answering 503.
            "client_config": Config(
                signature_version="s3v4",
                s3={"addressing_style": _STORE_ADDRESSING_STYLE},
                # total_max_attempts counts the first attempt; botocore's max_attempts does not.
                retries={"total_max_attempts": SERVICE_STORE_MAX_ATTEMPTS, "mode": "standard"},
                connect_timeout=SERVICE_STORE_CONNECT_TIMEOUT_SECONDS,
                read_timeout=SERVICE_STORE_READ_TIMEOUT_SECONDS,
                max_pool_connections=32,
            ),
            # Transfers through the file API run on the caller's thread, where a soft time limit
            # reaches them.
            "transfer_config": TransferConfig(use_threads=False),
            # Keys are chosen by the service and never reused: a write never renames.
            "file_overwrite": True,
            "querystring_expire": 3600,
        },
    }
