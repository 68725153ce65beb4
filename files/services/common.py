"""Steps every file transition shares: locking the row, stored objects, verifying bytes.

Each transition locks the file row (``select_for_update``) and re-checks the state under the
lock, so two concurrent calls give one success and one 409, never two successes. Events are
written in the same transaction (the outbox in ``webhooks``).

No object-store call is made under a row lock: a transition that asks the store (complete,
replace complete, restore) reads and checks the row without a lock, asks the store, then
locks, re-checks that nothing changed meanwhile, and writes, in one short transaction. A
store that hangs holds no lock and blocks no other request.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone

from accounts.limits import limits_for, type_allowed
from accounts.tenancy import Tenant
from files import hooks
from files.models import File, FileVersion, StoredObject
from storage_service import objectstore
from storage_service.errors import (
    ApiError,
    ContentTypeMismatch,
    ContentTypeNotAllowed,
    FileNotFound,
    FileTooLarge,
    ObjectNotFound,
    UploadSizeMismatch,
)
from storage_service.lookups import found_by_id
from storage_service.sniff import SNIFF_BYTES, contradicts, recorded_type, sniff

if TYPE_CHECKING:  # grants builds on this module's Verified
    from files.services.grants import Admitted

Status = File.Status


@dataclass(frozen=True)
class StartedUpload:
    file: File
    upload: objectstore.PresignedUpload
    replayed: bool = False


# --- Helpers -------------------------------------------------------------------------------


def read_file(tenant: Tenant, file_id: str, *, include_deleted: bool = False) -> File:
    """The file row, read without a lock (before the store calls); 404 like ``lock_file``."""
    queryset = File.objects.for_tenant(tenant)
    if not include_deleted:
        queryset = queryset.visible()
    file = found_by_id(
        queryset.select_related("current_object", "replacement_object"),
        file_id,
        prefix="file",
        missing=FileNotFound,
        message="No such file.",
    )
    file.project = tenant.project
    return file


def lock_file(tenant: Tenant, file_id: str, *, include_deleted: bool = False) -> File:
    """The file row, locked for this transaction; 404 when missing, foreign or deleted."""
    queryset = File.objects.for_tenant(tenant).select_for_update()
    if not include_deleted:
        queryset = queryset.visible()
    # No select_related here: when this statement waits for another transaction's lock,
    # PostgreSQL re-reads the locked file row but not the rows joined to it, so a joined
    # replacement_object would be the stale one. Related rows are read after the lock.
    file = found_by_id(
        queryset, file_id, prefix="file", missing=FileNotFound, message="No such file."
    )
    file.project = tenant.project  # the caller's instance, so events read no extra row
    return file


def new_object(tenant: Tenant, *, content_type: str, size: int) -> StoredObject:
    """A saved pending stored object for a presigned PUT."""
    ttl = settings.SERVICE_UPLOAD_URL_TTL_SECONDS
    stored = StoredObject(
        **tenant.owner(),
        storage_key=objectstore.new_key(tenant.project_id),
        declared_type=content_type,
        declared_size=size,
        upload_expires_at=timezone.now() + timedelta(seconds=ttl),
    )
    stored.save(force_insert=True)
    return stored


def pending_file(
    tenant: Tenant,
    stored: StoredObject,
    admitted: Admitted,
    *,
    filename: str,
    expires_at: datetime | None,
) -> File:
    """A saved pending file whose bytes will be ``stored`` (its declared type and size), where
    the start was ``admitted`` (its path, metadata and token): what a single or multipart
    upload start creates."""
    return File.objects.create(
        **tenant.owner(),
        filename=filename,
        path=admitted.path,
        content_type=stored.declared_type,
        size=stored.declared_size,
        metadata=admitted.metadata,
        expires_at=expires_at,
        current_object=stored,
        upload_token_id=admitted.upload_token_id,
    )


def presign_upload(stored: StoredObject) -> objectstore.PresignedUpload:
    return objectstore.presign_put(
        key=stored.storage_key,
        content_type=stored.declared_type,
        size=stored.declared_size,
        expires_in=settings.SERVICE_UPLOAD_URL_TTL_SECONDS,
    )


def discard(stored: StoredObject | None) -> None:
    """Hand an object nothing uses to the purge sweep, which removes it from the store."""
    if stored is not None and stored.state in {StoredObject.State.PENDING, StoredObject.State.LIVE}:
        stored.state = StoredObject.State.DISCARDED
        stored.save(update_fields=["state"])


def drop_replacement(file: File) -> None:
    """Forget the file's pending replacement (its upload expired, or its bytes were refused)
    and hand its object to the purge sweep; the caller saves ``replacement_object``. A delete
    drops it in its own statement (files/services/transitions.py's delete_files)."""
    discard(file.replacement_object)
    file.replacement_object = None


def checksum_of(info: objectstore.ObjectInfo) -> str:
    if info.sha256:
        try:
            return "sha256:" + base64.b64decode(info.sha256).hex()
        except (binascii.Error, ValueError):
            pass
    return f"etag:{info.etag}"


@dataclass(frozen=True)
class Verified:
    size: int
    checksum: str
    sniffed_type: str | None


def verify(stored: StoredObject) -> Verified | ApiError:
    """Read what the store really holds: its size (HEAD) and its type (first bytes).

    Raises ObjectNotFound when no bytes have arrived (nothing changes: the client may still
    PUT them); returns the refusal when the bytes arrived but are not what was declared.
    """
    info = objectstore.head(stored.storage_key)
    if info is None:
        raise ObjectNotFound(
            "No bytes have been stored for this upload yet: PUT them to upload.url first."
        )
    if info.size != stored.declared_size:
        return UploadSizeMismatch(
            f"The stored object has {info.size} bytes; {stored.declared_size} were declared.",
            details={"declaredSize": stored.declared_size, "actualSize": info.size},
        )
    sniffed = sniff(objectstore.read_prefix(stored.storage_key, min(SNIFF_BYTES, info.size)))
    if contradicts(stored.declared_type, sniffed):
        return ContentTypeMismatch(
            f"The stored bytes are {sniffed.best}, not the declared {stored.declared_type}.",
            details={"declaredType": stored.declared_type, "detectedType": sniffed.best},
        )
    recorded = recorded_type(stored.declared_type, sniffed)
    # The tenant's allowed types, against what the bytes really are (the declared type was
    # checked at start; a client cannot declare its way past the list). Bytes the sniffer
    # does not know (plain text) are what they were declared.
    real = recorded or stored.declared_type
    limits = limits_for(project_id=stored.project_id, mode=stored.mode)
    if limits is not None and not type_allowed(limits.allowed_content_types, real):
        return ContentTypeNotAllowed(
            f"The stored bytes are {real}, which this project does not accept.",
            details={"allowed": limits.allowed_content_types, "detectedType": real},
        )
    return Verified(size=info.size, checksum=checksum_of(info), sniffed_type=recorded)


def publish(file: File, stored: StoredObject, verified: Verified, *, version: int) -> None:
    """Make verified bytes the file's current version, with the FileVersion that keeps them."""
    stored.state = StoredObject.State.LIVE
    stored.size = verified.size
    stored.checksum = verified.checksum
    stored.sniffed_type = verified.sniffed_type
    stored.save(update_fields=["state", "size", "checksum", "sniffed_type"])
    file.status = Status.UPLOADED
    file.version = version
    file.current_object = stored
    file.content_type = stored.declared_type
    file.size = verified.size
    file.checksum = verified.checksum
    file.sniffed_type = verified.sniffed_type
    file.uploaded_at = timezone.now()
    file.save()
    FileVersion.objects.create(
        file=file,
        version=version,
        stored_object=stored,
        content_type=file.content_type,
        size=verified.size,
        checksum=verified.checksum,
    )
    # variants makes an eligible image's thumbnail (after commit).
    hooks.version_published.send(file=file, stored=stored, version=version)


def check_single_put_size(size: int) -> None:
    limit = settings.SERVICE_MAX_SINGLE_UPLOAD_BYTES
    if size > limit:
        raise FileTooLarge(
            f"A single upload is at most {limit} bytes; use a multipart upload for larger files.",
            details={"maxSize": limit},
        )
