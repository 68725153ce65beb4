"""Replacing a file's content: a new version under the same id."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.tenancy import Tenant
from events.models import Event
from files.events import record_file_event
from files.models import File
from files.services.common import (
    StartedUpload,
    Status,
    check_single_put_size,
    drop_replacement,
    lock_file,
    new_object,
    presign_upload,
    publish,
    read_file,
    verify,
)
from files.services.limits import limits_check, storage_reserve
from storage_service.errors import (
    ApiError,
    FileNotUploaded,
    NoReplaceInProgress,
    ReplaceInProgress,
)
from storage_service.timefmt import iso

# --- Replacement ---------------------------------------------------------------------------


def file_replace_start(
    *, tenant: Tenant, file_id: str, content_type: str, size: int
) -> StartedUpload:
    """Presign the PUT of a new version; the file keeps serving its current one meanwhile.

    A replacement whose upload URL has expired no longer blocks a new one (the client could
    not finish it anyway); one still within its URL lifetime does (409 REPLACE_IN_PROGRESS).
    """
    check_single_put_size(size)
    limits = limits_check(tenant=tenant, content_type=content_type, size=size)
    with transaction.atomic():
        file = lock_file(tenant, file_id)
        if file.status != Status.UPLOADED:
            raise FileNotUploaded(
                f"The file is {file.status}; only an uploaded file can be replaced."
            )
        pending = file.replacement_object
        if pending is not None:
            if pending.upload_expires_at and pending.upload_expires_at > timezone.now():
                raise ReplaceInProgress(
                    "A replacement is already pending for this file; complete it first.",
                    details={"expiresAt": iso(pending.upload_expires_at)},
                )
            drop_replacement(file)
        # After the discard: an expired replacement's reservation no longer counts. Lock
        # order: the file row, then the tenant's limits row (nothing takes them the other way).
        storage_reserve(tenant=tenant, limits=limits, size=size)
        stored = new_object(tenant, content_type=content_type, size=size)
        file.replacement_object = stored
        file.save(update_fields=["replacement_object", "updated_at"])
        return StartedUpload(file=file, upload=presign_upload(stored))


def file_replace_complete(*, tenant: Tenant, file_id: str) -> File:
    """Verify the replacement's bytes and publish them as version N+1.

    The previous version's object is kept (its FileVersion row still points at it). Bytes of
    another size or a contradicting type cancel the replacement (the client starts another).
    """
    stored = read_file(tenant, file_id).replacement_object
    if stored is None:
        raise NoReplaceInProgress("No replacement is pending for this file.")
    verified = verify(stored)  # no lock held while the store answers
    with transaction.atomic():
        file = lock_file(tenant, file_id)
        if file.replacement_object_id != stored.id:
            # Completed, cancelled or replaced by another replacement meanwhile.
            raise NoReplaceInProgress("No replacement is pending for this file.")
        if isinstance(verified, ApiError):
            drop_replacement(file)
            file.save(update_fields=["replacement_object", "updated_at"])
            refusal: ApiError | None = verified
        else:
            refusal = None
            previous_version = file.version
            file.replacement_object = None
            publish(file, stored, verified, version=previous_version + 1)
            record_file_event(
                Event.Type.FILE_REPLACED,
                file,
                previousVersion=previous_version,
                checksum=file.checksum,
            )
    if refusal is not None:
        raise refusal
    return file
