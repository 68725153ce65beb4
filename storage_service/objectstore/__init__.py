"""The gateway to the object store: every operation the service makes on it.

The store is configured once, as the storage ``STORAGES["files"]``: FileStorage
(objectstore/storage.py), django-storages' S3Storage plus the public endpoint. Download URLs
come from its ``url()``; the rest goes through the boto3 client it holds: what Django's
storage API cannot express (a PUT signed for an exact length, type and If-None-Match,
multipart uploads, HEAD with checksums, ranged reads, batched deletes), and the variant
workers' whole-object ``read`` and ``write``, one round trip each (the file API costs a HEAD
more for either). Upload URLs, and GETs signed at a chosen
instant, are signed in process (sigv4) with the credentials botocore resolves, so presigning
costs no round trip.
Every store error reaches callers as StorageUnavailable (or None/False where "not there" is
an answer).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import IO, TYPE_CHECKING, Any, cast
from urllib.parse import quote

from botocore.credentials import ReadOnlyCredentials
from botocore.exceptions import BotoCoreError, ClientError
from django.core.files.storage import storages
from django.utils import timezone

from storage_service import sigv4
from storage_service.errors import StorageUnavailable
from storage_service.ids import new_id
from storage_service.objectstore.storage import FileStorage

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# The STORAGES alias of the object store.
STORAGE_ALIAS = "files"


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


def storage() -> FileStorage:
    return cast(FileStorage, storages[STORAGE_ALIAS])


def client() -> S3Client:
    """The boto3 client the storage holds."""
    return storage().client


def bucket() -> str:
    return str(storage().bucket_name)


def new_key(project_id: str) -> str:
    """The key of a new object: the project's id, then a random id. Never derived from a
    filename or path, so renames and moves never touch the store and keys leak nothing."""
    return f"{project_id}/{new_id('obj')}"


def presign_put(*, key: str, content_type: str, size: int, expires_in: int) -> PresignedUpload:
    """A PUT URL whose signature covers the content type, the exact length and If-None-Match.

    The store itself then refuses bytes of another length or type, and refuses a second PUT
    over an object already written, so verified bytes can never be swapped afterwards.
    """
    url = sigv4.put_url(
        storage().signing_scope,
        key=key,
        content_type=content_type,
        size=size,
        expires_in=expires_in,
    )
    return PresignedUpload(
        url=url,
        method="PUT",
        headers={"content-type": content_type, "if-none-match": "*"},
        expires_at=timezone.now() + timedelta(seconds=expires_in),
    )


def part_signer(*, key: str, upload_id: str, expires_in: int) -> sigv4.PartUrlSigner:
    """Presigned part URLs of one multipart upload (see sigv4.PartUrlSigner)."""
    return sigv4.PartUrlSigner(
        storage().signing_scope, key=key, upload_id=upload_id, expires_in=expires_in
    )


def content_disposition(filename: str) -> str:
    # RFC 6266/5987: an ASCII fallback plus the exact UTF-8 name.
    ascii_name = filename.encode("ascii", "replace").decode().replace('"', "'").replace("?", "_")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"


# What every download says about its bytes, whatever the uploader sent with its PUT. A
# presigned PUT cannot forbid a header it does not sign, and the store keeps Content-Encoding,
# Cache-Control, Content-Language, Content-Disposition and Expires from the PUT and serves them
# back on every GET: an uploader could make browsers gunzip, cache publicly, or show a file
# inline. The GET's response-* overrides (part of its signature) replace them all. (x-amz-*
# headers, metadata and redirects included, need no override: the store refuses a presigned
# request carrying one it was not signed with.)
DOWNLOAD_CACHE_CONTROL = "private"
# The stored bytes are exactly the uploaded file (never a compressed form of it), so "no
# encoding" is the truth; a client that sent Content-Encoding: gzip gets its bytes back as is.
DOWNLOAD_CONTENT_ENCODING = "identity"
# BCP 47 "undetermined": the service knows nothing of the file's language.
DOWNLOAD_CONTENT_LANGUAGE = "und"


def presign_get(
    *, key: str, expires_in: int, filename: str | None = None, content_type: str | None = None
) -> PresignedDownload:
    """A GET URL (the storage's url()) whose response headers are the service's, whatever
    the uploader sent. (signed_get_url signs one at a chosen instant.)"""
    expires_at = timezone.now() + timedelta(seconds=expires_in)
    parameters: dict[str, Any] = {
        "ResponseCacheControl": DOWNLOAD_CACHE_CONTROL,
        "ResponseContentEncoding": DOWNLOAD_CONTENT_ENCODING,
        "ResponseContentLanguage": DOWNLOAD_CONTENT_LANGUAGE,
        # No use caching the answer beyond the URL's own life.
        "ResponseExpires": expires_at,
        "ResponseContentDisposition": content_disposition(filename) if filename else "attachment",
    }
    if content_type:
        parameters["ResponseContentType"] = content_type
    url = storage().url(key, parameters=parameters, expire=expires_in)
    return PresignedDownload(url=url, expires_at=expires_at)


def signed_get_url(
    *,
    key: str,
    signed_at: datetime,
    expires_in: int,
    response_headers: Mapping[str, str] | None = None,
) -> str:
    """A presigned GET of ``key`` signed at ``signed_at`` (not the clock), valid for
    ``expires_in`` seconds from it, whose answer carries ``response_headers`` (S3's
    ``response-content-type``, ``response-content-disposition``, ``response-cache-control``
    and the other ``response-*`` overrides) instead of the stored ones.

    The same arguments give the same URL (as long as the credentials are the same ones), so
    URLs whose ``signed_at`` is rounded to a window are cacheable: see sigv4.get_url. For the
    same reason the URL is remembered (``window_url``): a delivery URL resolved again within
    its window, the common case of a popular image, costs no signing.
    """
    scope = storage().signing_scope
    return window_url(
        scope,
        scope.frozen(),
        key,
        signed_at,
        expires_in,
        tuple(sorted((response_headers or {}).items())),
    )


@lru_cache(maxsize=4096)
def window_url(
    scope: sigv4.Scope,
    credentials: ReadOnlyCredentials,
    key: str,
    signed_at: datetime,
    expires_in: int,
    response_headers: tuple[tuple[str, str], ...],
) -> str:
    """signed_get_url's URL, by everything it depends on: the credentials are part of the
    key, so credentials that botocore renews sign new URLs from the moment they change."""
    return sigv4.get_url(
        scope, key=key, expires_in=expires_in, overrides=dict(response_headers), now=signed_at
    )


def check() -> None:
    """Raises unless the bucket answers (the readiness probe)."""
    client().head_bucket(Bucket=bucket())


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _is_missing(exc: ClientError) -> bool:
    code = _error_code(exc)
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
        if _error_code(exc) == "InvalidRange":
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


# --- Multipart uploads -----------------------------------------------------------------------
#
# The store's own upload id is a bearer of the upload: it stays in this module's callers'
# database rows and is never a field of a response, an event or a client-facing message.
# Only the presigned part URLs carry it, opaquely, because the store requires it there.


class MultipartRefused(Exception):
    """The store refused to assemble the parts (a part missing, an etag that does not match)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class HeldPart:
    number: int
    etag: str  # without the quotes S3 puts around it
    size: int
    last_modified: datetime | None = None


def multipart_start(*, key: str, content_type: str) -> str:
    """Start a multipart upload at the store; returns the store's upload id."""
    try:
        response = client().create_multipart_upload(
            Bucket=bucket(), Key=key, ContentType=content_type
        )
    except (ClientError, BotoCoreError) as exc:
        raise StorageUnavailable("The object store could not start the upload; retry.") from exc
    return str(response["UploadId"])


def multipart_parts(*, key: str, upload_id: str, page_size: int = 1000) -> list[HeldPart] | None:
    """Every part the store holds for the upload, following its pages; None if it has none.

    S3 answers at most 1,000 parts per ListParts call, so an upload of up to 10,000 parts
    takes up to ten calls. S3 keeps only the last upload of a part number; SeaweedFS keeps
    (and lists) every one, in no set order, and assembles the one whose etag complete names.
    """
    parts: list[HeldPart] = []
    marker = 0
    while True:
        try:
            response = client().list_parts(
                Bucket=bucket(),
                Key=key,
                UploadId=upload_id,
                MaxParts=page_size,
                PartNumberMarker=marker,
            )
        except ClientError as exc:
            if _error_code(exc) == "NoSuchUpload":
                return None
            raise StorageUnavailable("The object store refused to list the parts.") from exc
        except BotoCoreError as exc:
            raise StorageUnavailable("The object store is unreachable; try again.") from exc
        parts.extend(
            HeldPart(
                number=int(part["PartNumber"]),
                etag=str(part.get("ETag", "")).strip('"'),
                size=int(part["Size"]),
                last_modified=part.get("LastModified"),
            )
            for part in response.get("Parts", [])
        )
        next_marker = int(response.get("NextPartNumberMarker") or 0)
        if not response.get("IsTruncated") or next_marker <= marker:
            return parts
        marker = next_marker


def multipart_complete(*, key: str, upload_id: str, parts: list[tuple[int, str]]) -> bool:
    """Assemble the parts into the object. False when the store no longer has the upload.

    ``parts`` are (part number, etag) in order. Raises MultipartRefused when the store
    refuses the list (a part missing or replaced since it was listed).
    """
    try:
        client().complete_multipart_upload(
            Bucket=bucket(),
            Key=key,
            UploadId=upload_id,
            MultipartUpload={
                "Parts": [{"PartNumber": number, "ETag": f'"{etag}"'} for number, etag in parts]
            },
        )
    except ClientError as exc:
        code = _error_code(exc)
        if code == "NoSuchUpload":
            return False
        if code in {"InvalidPart", "InvalidPartOrder", "EntityTooSmall"}:
            raise MultipartRefused(code) from exc
        raise StorageUnavailable("The object store could not assemble the parts.") from exc
    except BotoCoreError as exc:
        raise StorageUnavailable("The object store is unreachable; try again.") from exc
    return True


def multipart_abort(*, key: str, upload_id: str) -> None:
    """Abort the upload and release its parts; an upload the store no longer has is fine."""
    try:
        client().abort_multipart_upload(Bucket=bucket(), Key=key, UploadId=upload_id)
    except ClientError as exc:
        if _error_code(exc) == "NoSuchUpload":
            return
        raise StorageUnavailable("The object store could not abort the upload.") from exc
    except BotoCoreError as exc:
        raise StorageUnavailable("The object store is unreachable; try again.") from exc


# --- Whole objects ---------------------------------------------------------------------------
#
# The rest of the service never moves bytes (clients use presigned URLs); the variant workers
# must read an original and write a result, through the storage's file API.

# Originals up to this size are read into memory; larger ones spill to a temporary file.
SPOOL_BYTES = 64 * 1024 * 1024


class ObjectMissing(Exception):
    """The object is not in the store (a purge raced the work, or the store lost it)."""


class SourceTooLarge(Exception):
    """The object is larger than the worker may read; the message says how large."""


# Read from the response stream in pieces of this size, so a limit is never overshot by much.
CHUNK_BYTES = 1024 * 1024


def read(key: str, *, max_bytes: int) -> IO[bytes]:
    """The whole object, rewound, in memory or (when large) in a temporary file; never more
    than ``max_bytes`` of it.

    One GET of at most ``max_bytes + 1`` bytes (a range): its answer's ``Content-Range``
    gives the object's whole size before a byte of the body is read, so a larger object is
    refused (SourceTooLarge) with its body left unread, and one that the store sends whole
    anyway costs at most that much to find out. One round trip: a HEAD first would add a
    second to every transform.
    """
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (returned)
    try:
        try:
            response = client().get_object(Bucket=bucket(), Key=key, Range=f"bytes=0-{max_bytes}")
        except ClientError as exc:
            if _error_code(exc) == "InvalidRange":  # an empty object has no byte 0
                spool.seek(0)
                return spool
            raise
        body = response["Body"]
        try:
            size = _whole_size(response)
            if size > max_bytes:
                raise SourceTooLarge(too_large(size, max_bytes))
            received = 0
            while chunk := body.read(min(CHUNK_BYTES, max_bytes + 1 - received)):
                received += len(chunk)
                if received > max_bytes:
                    raise SourceTooLarge(too_large(received, max_bytes, grew=True))
                spool.write(chunk)
        finally:
            body.close()
    except ClientError as exc:
        spool.close()
        if _is_missing(exc):
            raise ObjectMissing(key) from exc
        raise StorageUnavailable("The object store refused the request.") from exc
    except BotoCoreError as exc:
        spool.close()
        raise StorageUnavailable("The object store is unreachable; try again.") from exc
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def _whole_size(response: Mapping[str, Any]) -> int:
    """The object's size from a ranged GET's answer: after the slash of ``Content-Range``
    (``bytes 0-99/1234``), or the length sent when the store sent it whole (no range)."""
    content_range = str(response.get("ContentRange") or "")
    total = content_range.rpartition("/")[2]
    if total.isdigit():
        return int(total)
    return int(response.get("ContentLength") or 0)


def too_large(size: int, limit: int, *, grew: bool = False) -> str:
    """Why a source is refused: its size (or, when only a read past the cap showed it, that
    it is more than the cap) beside the cap."""
    found = f"more than {limit}" if grew else str(size)
    return (
        f"The original is {found} bytes; variants are made from originals of at most {limit} bytes."
    )


def write(key: str, data: bytes, *, content_type: str) -> str:
    """Store ``data`` under ``key`` (keys are never reused) with the storage's object
    parameters, in one PUT; returns the store's ETag (without quotes). botocore sends the
    body's checksum with it, which the store verifies before it answers."""
    parameters = {**storage().get_object_parameters(key), "ContentType": content_type}
    try:
        response = client().put_object(Bucket=bucket(), Key=key, Body=data, **parameters)
    except (ClientError, BotoCoreError) as exc:
        raise StorageUnavailable("The object store could not store the variant.") from exc
    return str(response.get("ETag", "")).strip('"')
