"""A tenant's limits at upload, multipart and replace start, and again at complete.

Size and type are checked against what the client declares, before anything is written.
The storage quota counts what the store holds for the tenant (files/usage.py) plus what its
pending uploads reserve (their declared sizes, until they complete, fail or expire), so
uploads started at once cannot together overshoot it: each reserves under the tenant's
limits row, locked (``SELECT ... FOR UPDATE``) until the transaction that inserts its pending
object commits, and the next one counts that object (its insert's usage delta row, written by
the trigger in that transaction; the sum reads the tenant's few delta rows, not its objects).
"""

from __future__ import annotations

from django.db import connection

from accounts.limits import limits_of, type_allowed
from accounts.models import ProjectLimits
from accounts.tenancy import Tenant
from files.usage import held_bytes
from storage_service.errors import ContentTypeNotAllowed, FileTooLarge, QuotaExceeded


def limits_check(*, tenant: Tenant, content_type: str, size: int) -> ProjectLimits | None:
    """Refuse a declared size over ``maxFileSizeBytes`` (413 FILE_TOO_LARGE) or a declared
    type outside ``allowedContentTypes`` (422 CONTENT_TYPE_NOT_ALLOWED). Returns the limits,
    for ``storage_reserve``; None when the tenant has none."""
    limits = limits_of(tenant)
    if limits is None:
        return None
    maximum = limits.max_file_size_bytes
    if maximum is not None and size > maximum:
        raise FileTooLarge(
            f"This project accepts files of at most {maximum} bytes.",
            details={"maxBytes": maximum},
        )
    check_type(limits, content_type)
    return limits


def check_type(limits: ProjectLimits | None, content_type: str | None) -> None:
    allowed = limits.allowed_content_types if limits is not None else None
    if not type_allowed(allowed, content_type):
        raise ContentTypeNotAllowed(
            f"This project does not accept {content_type or 'this type of content'}.",
            details={"allowed": allowed},
        )


def storage_reserve(*, tenant: Tenant, limits: ProjectLimits | None, size: int) -> None:
    """Admit ``size`` more bytes under ``maxStorageBytes`` (403 QUOTA_EXCEEDED otherwise).

    Call it inside the transaction that then inserts the pending object: the limits row stays
    locked until that commits, so the next reservation waits for it and counts its object.
    The limit is read again under the lock (staff may have changed it meanwhile).
    """
    if limits is None or limits.max_storage_bytes is None:
        return
    if not connection.in_atomic_block:
        raise RuntimeError("storage_reserve holds its lock only inside a transaction")
    locked = ProjectLimits.objects.select_for_update().filter(pk=limits.pk).first()
    if locked is None or locked.max_storage_bytes is None:
        return
    used = held_bytes(tenant=tenant)
    if used + size > locked.max_storage_bytes:
        raise QuotaExceeded(
            f"This upload of {size} bytes would take the project past its storage limit of "
            f"{locked.max_storage_bytes} bytes ({used} used or reserved).",
            details={
                "usedBytes": used,
                "limitBytes": locked.max_storage_bytes,
                "requestedBytes": size,
            },
        )
