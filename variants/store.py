"""Reading and writing whole objects, which only the variant workers do.

The rest of the service never moves bytes (clients use presigned URLs); the workers must read
an original and write a result. Errors map to StorageUnavailable like objectstore's own.
"""

from __future__ import annotations

import tempfile
from typing import IO

from botocore.exceptions import BotoCoreError, ClientError

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


def _store_error(exc: ClientError, key: str) -> Exception:
    code = str(exc.response.get("Error", {}).get("Code", ""))
    if code in {"404", "NoSuchKey", "NotFound"}:
        return ObjectMissing(key)
    return StorageUnavailable("The object store refused the request.")


def read(key: str, *, max_bytes: int) -> IO[bytes]:
    """The whole object, rewound, in memory or (when large) in a temporary file; never more
    than ``max_bytes`` of it.

    The size is checked by HEAD before a byte is downloaded; then the GET asks for a range of
    at most ``max_bytes + 1`` bytes, so an object replaced by a larger one after the HEAD
    still costs at most that much to find out (SourceTooLarge either way).
    """
    info = objectstore.head(key)  # StorageUnavailable when the store does not answer
    if info is None:
        raise ObjectMissing(key)
    if info.size > max_bytes:
        raise SourceTooLarge(_too_large(info.size, max_bytes))
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (returned)
    try:
        response = objectstore.client().get_object(
            Bucket=objectstore.bucket(), Key=key, Range=f"bytes=0-{max_bytes}"
        )
        body = response["Body"]
        received = 0
        try:
            while chunk := body.read(min(CHUNK_BYTES, max_bytes + 1 - received)):
                received += len(chunk)
                if received > max_bytes:
                    raise SourceTooLarge(_too_large(received, max_bytes, grew=True))
                spool.write(chunk)
        finally:
            body.close()
    except ClientError as exc:
        spool.close()
        raise _store_error(exc, key) from exc
    except BotoCoreError as exc:
        spool.close()
        raise StorageUnavailable("The object store is unreachable; try again.") from exc
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def _too_large(size: int, limit: int, *, grew: bool = False) -> str:
    found = f"more than {limit}" if grew else str(size)
    return (
        f"The original is {found} bytes; variants are made from originals of at most {limit} bytes."
    )


def write(key: str, data: bytes, *, content_type: str) -> str:
    """Store ``data`` under ``key``; returns the store's ETag (without quotes)."""
    try:
        response = objectstore.client().put_object(
            Bucket=objectstore.bucket(), Key=key, Body=data, ContentType=content_type
        )
    except (ClientError, BotoCoreError) as exc:
        raise StorageUnavailable("The object store could not store the variant.") from exc
    return str(response.get("ETag", "")).strip('"')
