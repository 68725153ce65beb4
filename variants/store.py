"""Reading and writing whole objects, which only the variant workers do, through the storage.

The rest of the service never moves bytes (clients use presigned URLs); the workers must read
an original and write a result. Errors map to StorageUnavailable like the gateway's own.
"""

from __future__ import annotations

import tempfile
from typing import IO

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import BotoCoreError, ClientError
from django.core.files.uploadedfile import SimpleUploadedFile

from storage_service import objectstore
from storage_service.errors import StorageUnavailable

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

    Opening the storage's file reads the size (a HEAD) before a byte is downloaded; then a
    GET of at most ``max_bytes + 1`` bytes (a range, which the file API cannot ask for) means
    an object replaced by a larger one since still costs at most that much to find out
    (SourceTooLarge either way).
    """
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (returned)
    try:
        with objectstore.storage().open(key, "rb") as stored:
            if stored.size > max_bytes:
                raise SourceTooLarge(_too_large(stored.size, max_bytes))
            body = stored.obj.get(Range=f"bytes=0-{max_bytes}")["Body"]
        received = 0
        try:
            while chunk := body.read(min(CHUNK_BYTES, max_bytes + 1 - received)):
                received += len(chunk)
                if received > max_bytes:
                    raise SourceTooLarge(_too_large(received, max_bytes, grew=True))
                spool.write(chunk)
        finally:
            body.close()
    except FileNotFoundError as exc:  # the storage's answer to a 404 on open
        spool.close()
        raise ObjectMissing(key) from exc
    except ClientError as exc:
        spool.close()
        if _is_missing(exc):  # deleted between the HEAD and the GET
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


def _is_missing(exc: ClientError) -> bool:
    return str(exc.response.get("Error", {}).get("Code", "")) in {"404", "NoSuchKey", "NotFound"}


def _too_large(size: int, limit: int, *, grew: bool = False) -> str:
    found = f"more than {limit}" if grew else str(size)
    return (
        f"The original is {found} bytes; variants are made from originals of at most {limit} bytes."
    )


def write(key: str, data: bytes, *, content_type: str) -> str:
    """Store ``data`` under ``key`` (the storage's save, as is: keys are never reused);
    returns the store's ETag (without quotes)."""
    try:
        saved = objectstore.storage().save(
            key, SimpleUploadedFile(key, data, content_type=content_type)
        )
    except (ClientError, BotoCoreError, S3UploadFailedError) as exc:
        raise StorageUnavailable("The object store could not store the variant.") from exc
    if saved != key:
        raise RuntimeError(f"the storage saved {key!r} as {saved!r}")
    info = objectstore.head(key)
    if info is None or info.size != len(data):
        raise StorageUnavailable("The object store lost the variant it was given.")
    return info.etag
