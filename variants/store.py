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


def read(key: str) -> IO[bytes]:
    """The whole object, rewound, in memory or (when large) in a temporary file."""
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (returned)
    try:
        objectstore.client().download_fileobj(objectstore.bucket(), key, spool)
    except ClientError as exc:
        spool.close()
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in {"404", "NoSuchKey", "NotFound"}:
            raise ObjectMissing(key) from exc
        raise StorageUnavailable("The object store refused the request.") from exc
    except BotoCoreError as exc:
        spool.close()
        raise StorageUnavailable("The object store is unreachable; try again.") from exc
    spool.seek(0)
    return spool


def write(key: str, data: bytes, *, content_type: str) -> str:
    """Store ``data`` under ``key``; returns the store's ETag (without quotes)."""
    try:
        response = objectstore.client().put_object(
            Bucket=objectstore.bucket(), Key=key, Body=data, ContentType=content_type
        )
    except (ClientError, BotoCoreError) as exc:
        raise StorageUnavailable("The object store could not store the variant.") from exc
    return str(response.get("ETag", "")).strip('"')
