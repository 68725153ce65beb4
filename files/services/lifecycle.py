"""Soft delete and restore of one file."""

from __future__ import annotations

from django.db import transaction

from accounts.tenancy import Tenant
from files.models import File, StoredObject
from files.services.common import Status, read_file
from files.services.transitions import Selection, delete_files, restore_files
from storage_service import objectstore
from storage_service.errors import FileNotDeleted, FileNotFound, ObjectNotFound
from storage_service.ids import looks_like_id

# --- Delete, restore ----------------------------------------------------------------------


def file_delete(*, tenant: Tenant, file_id: str) -> File:
    """Soft delete (the transition in files/services/transitions.py): the bytes stay for the
    grace window; a pending replacement is dropped. 404 when missing or already deleted."""
    if not looks_like_id(file_id, "file"):
        raise FileNotFound("No such file.")
    with transaction.atomic():
        if not delete_files(tenant=tenant, rows=Selection("f.id = %s", [file_id])).count:
            raise FileNotFound("No such file.")
        return read_file(tenant, file_id, include_deleted=True)


def file_restore(*, tenant: Tenant, file_id: str) -> File:
    """Bring a soft-deleted file back, as long as its bytes have not been purged.

    1. The row is read and checked without a lock, and the store is asked (HEAD) whether an
       uploaded file's bytes are still there.
    2. The transition (files/services/transitions.py) locks the row and re-checks that it is
       still restorable and still holds the object asked about; when it changed nothing, the
       row read again tells why (a purge or another restore meanwhile).
    """
    file = read_file(tenant, file_id, include_deleted=True)
    _check_restorable(file)
    stored_id = file.current_object_id
    if (file.status_before_delete or Status.UPLOADED) == Status.UPLOADED and (
        objectstore.head(file.current_object.storage_key) is None
    ):
        raise ObjectNotFound("The file's stored object no longer exists in the store.")
    with transaction.atomic():
        rows = Selection("f.id = %s AND f.current_object_id = %s", [file_id, stored_id])
        restored = restore_files(tenant=tenant, rows=rows).count
        file = read_file(tenant, file_id, include_deleted=True)
        if not restored:
            _check_restorable(file)
            raise FileNotDeleted("The file changed meanwhile; retry.")
        return file


def _check_restorable(file: File) -> None:
    """Why the file cannot be restored, as an error (the transition's RESTORABLE, in words)."""
    if file.status != Status.DELETED:
        raise FileNotDeleted(f"The file is {file.status}, not deleted.")
    if file.purged_at is not None or file.current_object.state == StoredObject.State.PURGED:
        raise ObjectNotFound("The file's stored object has been purged; it cannot be restored.")
