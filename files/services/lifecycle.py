"""Soft delete and restore."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.tenancy import Tenant
from files.events import record_file_event
from files.models import File, StoredObject
from files.services.common import (
    Status,
    discard,
    lock_file,
    read_file,
)
from storage_service import objectstore
from storage_service.errors import (
    FileNotDeleted,
    ObjectNotFound,
)
from storage_service.timefmt import iso
from webhooks.models import Event

# --- Delete, restore, purge ----------------------------------------------------------------


def file_delete(*, tenant: Tenant, file_id: str) -> File:
    """Soft delete: the bytes stay for the grace window; a pending replacement is dropped."""
    with transaction.atomic():
        file = lock_file(tenant, file_id)
        soft_delete(file, Event.Type.FILE_DELETED)
        return file


def soft_delete(file: File, event: Event.Type, **extra: object) -> None:
    """DELETE's change to a file its caller has locked, with ``event`` (``file.deleted``, or
    the expiry sweep's ``file.expired``) carrying ``deletedAt``, ``purgeAfter`` and ``extra``."""
    now = timezone.now()
    file.status_before_delete = file.status
    file.status = Status.DELETED
    file.deleted_at = now
    discard(file.replacement_object)
    file.replacement_object = None
    file.save(
        update_fields=[
            "status",
            "status_before_delete",
            "deleted_at",
            "replacement_object",
            "updated_at",
        ]
    )
    purge_after = now + timedelta(days=settings.SERVICE_DELETE_GRACE_DAYS)
    record_file_event(event, file, **extra, deletedAt=iso(now), purgeAfter=iso(purge_after))


def file_restore(*, tenant: Tenant, file_id: str) -> File:
    """Bring a soft-deleted file back, as long as its bytes have not been purged.

    The store is asked (HEAD) before the row is locked; under the lock the checks are made
    again, so a purge or another restore meanwhile is seen.
    """
    file = read_file(tenant, file_id, include_deleted=True)
    _check_restorable(file)
    stored_id = file.current_object_id
    if (file.status_before_delete or Status.UPLOADED) == Status.UPLOADED and (
        objectstore.head(file.current_object.storage_key) is None
    ):
        raise ObjectNotFound("The file's stored object no longer exists in the store.")
    with transaction.atomic():
        file = lock_file(tenant, file_id, include_deleted=True)
        _check_restorable(file)
        if file.current_object_id != stored_id:
            raise FileNotDeleted("The file changed meanwhile; retry.")
        restored_status = file.status_before_delete or Status.UPLOADED
        file.status = restored_status
        file.deleted_at = None
        file.status_before_delete = ""
        # An expired file comes back without its expiry, or the sweep would delete it again.
        file.expires_at = None
        file.save(
            update_fields=[
                "status",
                "deleted_at",
                "status_before_delete",
                "expires_at",
                "updated_at",
            ]
        )
        record_file_event(Event.Type.FILE_RESTORED, file)
        return file


def _check_restorable(file: File) -> None:
    if file.status != Status.DELETED:
        raise FileNotDeleted(f"The file is {file.status}, not deleted.")
    if file.purged_at is not None or file.current_object.state == StoredObject.State.PURGED:
        raise ObjectNotFound("The file's stored object has been purged; it cannot be restored.")
