"""An upload token's bounds on the uploads it starts and completes (accounts/grants.py).

Each start checks them before anything is written, in this order: the folder (403
PATH_NOT_ALLOWED), the declared size (413 FILE_TOO_LARGE), the declared type (422
CONTENT_TYPE_NOT_ALLOWED); then the token's metadata goes on the file. The project's own
limits are checked after these, as with a key. At complete the type the bytes really are is
checked again, whoever completes the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from accounts.grants import UploadGrant
from accounts.limits import type_allowed
from files import hooks
from files.models import File, StoredObject
from files.services.common import Verified
from files.validation import clean_metadata
from storage_service.errors import (
    ApiError,
    ContentTypeNotAllowed,
    FileNotFound,
    FileTooLarge,
    IdempotencyKeyReused,
    PathNotAllowed,
    ValidationError,
)


@dataclass(frozen=True)
class Admitted:
    path: str | None
    metadata: dict[str, Any] | None
    upload_token_id: str | None = None  # the token the file is started under, if any


def in_folder(path: str | None, folder: str | None) -> bool:
    """Whether ``path`` is ``folder`` or below it (every path is below the root, None)."""
    if folder is None:
        return True
    return path is not None and (path == folder or path.startswith(folder + "/"))


def grant_admit(
    grant: UploadGrant | None,
    *,
    path: str | None,
    size: int,
    content_type: str,
    metadata: dict[str, Any] | None,
) -> Admitted:
    """The start's path and metadata under the token, or the refusal of its bounds. A start
    that names no path goes in the token's folder. The token's metadata keys win over the
    request's: a page cannot relabel what its server fixed. Without a grant (a key's start):
    the request's own path and metadata."""
    if grant is None:
        return Admitted(path=path, metadata=metadata)
    if path is None:
        path = grant.path
    if not in_folder(path, grant.path):
        raise PathNotAllowed(
            f"This upload token uploads only into {grant.path!r} or below it.",
            details={"allowedPath": grant.path},
        )
    maximum = grant.max_file_size_bytes
    if maximum is not None and size > maximum:
        raise FileTooLarge(
            f"This upload token accepts files of at most {maximum} bytes.",
            details={"maxBytes": maximum},
        )
    if not type_allowed(grant.allowed_content_types, content_type):
        raise ContentTypeNotAllowed(
            f"This upload token does not accept {content_type}.",
            details={"allowed": grant.allowed_content_types},
        )
    if grant.metadata:
        merged = {**(metadata or {}), **grant.metadata}
        try:
            metadata = clean_metadata(merged)
        except serializers.ValidationError as exc:
            raise ValidationError(
                "The request's metadata with the upload token's is over the metadata limits.",
                details={"metadata": [str(message) for message in exc.detail]},
            ) from exc
    return Admitted(path=path, metadata=metadata, upload_token_id=grant.token_id)


def grant_owns(grant: UploadGrant | None, file: File) -> None:
    """A file another token or a key started answers as missing (404) to a token."""
    if grant is not None and file.upload_token_id != grant.token_id:
        raise FileNotFound("No such file.")


def grant_replay(grant: UploadGrant | None, file: File) -> None:
    """An Idempotency-Key replay answers only the credential that made the file: a token
    replaying a key's (or another token's) start learns nothing of it (409)."""
    if grant is not None and file.upload_token_id != grant.token_id:
        raise IdempotencyKeyReused("This Idempotency-Key was used for another upload.")


def grant_recheck(
    file: File, stored: StoredObject, verified: Verified | ApiError
) -> Verified | ApiError:
    """The verified bytes of a token's file refused when their real type is outside the
    token's ``allowedContentTypes`` (the file then fails, as for the project's limits)."""
    if file.upload_token_id is None or isinstance(verified, ApiError):
        return verified
    real = verified.sniffed_type or stored.declared_type
    for allowed in hooks.upload_token_types.send(token_id=file.upload_token_id):
        if not type_allowed(allowed, real):
            return ContentTypeNotAllowed(
                f"The stored bytes are {real}, which this upload token does not accept.",
                details={"allowed": allowed, "detectedType": real},
            )
    return verified
