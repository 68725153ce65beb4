"""The object-store client: presigning, HEAD, ranged reads and deletes.

Presigning is pure CPU (SigV4 over the request), so a presigned URL costs no round trip to
the store. Two clients are kept: one addressed at the endpoint the service reaches, one at the
public endpoint clients reach (they differ when the store sits behind another hostname); a
presigned URL is only valid for the host it was signed for.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.utils import timezone

from storage_service.errors import StorageUnavailable

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_lock = threading.Lock()


@dataclass(frozen=True)
class PresignedUpload:
    url: str
    method: str
    headers: dict[str, str]
    expires_at: datetime


@dataclass(frozen=True)
class PresignedDownload:
    url: str
    expires_at: datetime


@dataclass(frozen=True)
class ObjectInfo:
    size: int
    etag: str
    content_type: str | None
    sha256: str | None


def _make_client(endpoint_url: str | None) -> S3Client:
    config = Config(
        signature_version="s3v4",
        s3=cast(Any, {"addressing_style": settings.AWS_S3_ADDRESSING_STYLE}),
        retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=5,
        read_timeout=30,
        max_pool_connections=32,
    )
    with _lock:  # boto3's default session is not thread-safe while creating clients
        return boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=settings.AWS_S3_REGION_NAME,
            aws_access_key_id=settings.AWS_ACCESS_KEY_ID,
            aws_secret_access_key=settings.AWS_SECRET_ACCESS_KEY,
            config=config,
        )


@lru_cache(maxsize=1)
def client() -> S3Client:
    return _make_client(settings.AWS_S3_ENDPOINT_URL)


@lru_cache(maxsize=1)
def presign_client() -> S3Client:
    return _make_client(settings.AWS_S3_PUBLIC_ENDPOINT_URL)


def reset_clients() -> None:
    """Forget cached clients (tests that change settings)."""
    client.cache_clear()
    presign_client.cache_clear()


def bucket() -> str:
    return str(settings.AWS_STORAGE_BUCKET_NAME)


def presign_put(*, key: str, content_type: str, size: int, expires_in: int) -> PresignedUpload:
    """A PUT URL whose signature covers the content type, the exact length and If-None-Match.

    The store itself then refuses bytes of another length or type, and refuses a second PUT
    over an object already written, so verified bytes can never be swapped afterwards.
    """
    url = presign_client().generate_presigned_url(
        "put_object",
        Params={
            "Bucket": bucket(),
            "Key": key,
            "ContentType": content_type,
            "ContentLength": size,
            "IfNoneMatch": "*",
        },
        ExpiresIn=expires_in,
    )
    return PresignedUpload(
        url=url,
        method="PUT",
        headers={"content-type": content_type, "if-none-match": "*"},
        expires_at=timezone.now() + timedelta(seconds=expires_in),
    )


def content_disposition(filename: str) -> str:
    # RFC 6266/5987: an ASCII fallback plus the exact UTF-8 name.
    ascii_name = filename.encode("ascii", "replace").decode().replace('"', "'").replace("?", "_")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"


def presign_get(
    *, key: str, expires_in: int, filename: str | None = None, content_type: str | None = None
) -> PresignedDownload:
    params: dict[str, Any] = {"Bucket": bucket(), "Key": key}
    if filename:
        params["ResponseContentDisposition"] = content_disposition(filename)
    if content_type:
        params["ResponseContentType"] = content_type
    url = presign_client().generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in)
    return PresignedDownload(url=url, expires_at=timezone.now() + timedelta(seconds=expires_in))


def _is_missing(exc: ClientError) -> bool:
    code = str(exc.response.get("Error", {}).get("Code", ""))
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in {"404", "NoSuchKey", "NotFound"} or status == 404


def head(key: str) -> ObjectInfo | None:
    """The stored object's real size, etag and checksum, or None when there is none."""
    try:
        response = client().head_object(Bucket=bucket(), Key=key, ChecksumMode="ENABLED")
    except ClientError as exc:
        if _is_missing(exc):
            return None
        raise StorageUnavailable("The object store refused the request.") from exc
    except BotoCoreError as exc:
        raise StorageUnavailable("The object store is unreachable; try again.") from exc
    return ObjectInfo(
        size=int(response["ContentLength"]),
        etag=str(response.get("ETag", "")).strip('"'),
        content_type=response.get("ContentType"),
        sha256=response.get("ChecksumSHA256"),
    )


def read_prefix(key: str, length: int) -> bytes:
    """The first ``length`` bytes of an object (fewer if it is shorter)."""
    if length <= 0:
        return b""
    try:
        response = client().get_object(Bucket=bucket(), Key=key, Range=f"bytes=0-{length - 1}")
        return response["Body"].read()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "InvalidRange":
            return b""  # an empty object has no first byte to range over
        if _is_missing(exc):
            return b""
        raise StorageUnavailable("The object store refused the request.") from exc
    except BotoCoreError as exc:
        raise StorageUnavailable("The object store is unreachable; try again.") from exc


def delete(keys: list[str]) -> None:
    """Delete objects; deleting one that is already gone succeeds (S3 semantics)."""
    for start in range(0, len(keys), 1000):  # DeleteObjects takes at most 1,000 keys
        chunk = keys[start : start + 1000]
        try:
            response = client().delete_objects(
                Bucket=bucket(),
                Delete={"Objects": [{"Key": key} for key in chunk], "Quiet": True},
            )
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable("The object store could not delete objects.") from exc
        errors = [e for e in response.get("Errors", []) if e.get("Code") != "NoSuchKey"]
        if errors:
            raise StorageUnavailable(f"The object store could not delete {len(errors)} object(s).")
