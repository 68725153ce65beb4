"""Reading upload sessions, always from the tenant (project and mode) of the API key."""

from __future__ import annotations

from accounts.tenancy import Tenant
from storage_service.errors import UploadNotFound
from storage_service.lookups import found_by_id
from uploads.models import UploadSession


def upload_get(*, tenant: Tenant, upload_id: str) -> UploadSession:
    """A session of the tenant; unknown and foreign ids are the same 404."""
    return found_by_id(
        UploadSession.objects.for_tenant(tenant).select_related("stored_object"),
        upload_id,
        prefix="upload",
        missing=UploadNotFound,
        message="No such upload.",
    )


def upload_lock(*, tenant: Tenant, upload_id: str) -> UploadSession:
    """The session row locked for this transaction (the caller is inside one); 404 as above.

    No join in the locking statement: when it waits for another transaction, PostgreSQL
    re-reads the locked row but not the joined ones. The object is read after the lock.
    """
    return found_by_id(
        UploadSession.objects.for_tenant(tenant).select_for_update(),
        upload_id,
        prefix="upload",
        missing=UploadNotFound,
        message="No such upload.",
    )
