"""Per-tenant limits (project and mode): what staff set, and what a declared upload must fit.

The limits are read here; files enforces the storage quota, since only it knows what the
store holds (files/services/limits.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction

from accounts.models import Project, ProjectLimits
from accounts.tenancy import Tenant

# A MIME type as `type/subtype`, or a whole type as `type/*` (RFC 6838's restricted names).
_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
_ALLOWED_TYPE = re.compile(rf"{_NAME}/(?:{_NAME}|\*)")
# The same, as the API documents and checks an entry it receives (no surrounding space).
ALLOWED_TYPE_PATTERN = rf"^{_NAME}/(?:{_NAME}|\*)$"
MAX_ALLOWED_TYPES = 100


def clean_allowed_types(values: Iterable[str]) -> list[str]:
    """Each entry stripped and lowercased (MIME types compare case-insensitively), duplicates
    dropped; anything that is not ``type/subtype`` or ``type/*`` is refused."""
    cleaned: list[str] = []
    for raw in values:
        value = raw.strip().lower()
        if not _ALLOWED_TYPE.fullmatch(value):
            raise DjangoValidationError(
                f"{raw!r} is not a MIME type such as 'image/png' or 'image/*'."
            )
        if value not in cleaned:
            cleaned.append(value)
    if not cleaned:
        raise DjangoValidationError("Give at least one type, or none for any type.")
    if len(cleaned) > MAX_ALLOWED_TYPES:
        raise DjangoValidationError(f"At most {MAX_ALLOWED_TYPES} types.")
    return cleaned


def type_allowed(allowed: list[str] | None, content_type: str | None) -> bool:
    """Whether ``content_type`` (parameters such as ``; charset=`` ignored) matches one of
    ``allowed``, exactly or by its ``type/*``. No list allows every type; no type (bytes the
    sniffer does not know) matches no list."""
    if allowed is None:
        return True
    if not content_type:
        return False
    base = content_type.split(";", 1)[0].strip().lower()
    wildcard = base.split("/", 1)[0] + "/*"
    return base in allowed or wildcard in allowed


def limits_of(tenant: Tenant) -> ProjectLimits | None:
    """The tenant's limits, or None when staff set none (one indexed lookup)."""
    return limits_for(project_id=tenant.project_id, mode=tenant.mode)


def limits_for(*, project_id: str, mode: str) -> ProjectLimits | None:
    """``limits_of`` for work that starts from a tenant-owned row's project id and mode."""
    return ProjectLimits.objects.filter(project_id=project_id, mode=mode).first()


UNSET = object()
LIMIT_FIELDS = ("max_storage_bytes", "max_file_size_bytes", "allowed_content_types")


def limits_set(*, project: Project, mode: str, changes: dict[str, Any]) -> ProjectLimits:
    """Set some of one tenant's limits (``None`` removes one), keeping the others.

    The row is locked while it changes, so two staff changes at once each keep the other's
    fields; a row whose limits are all removed stays (it is the reservations' lock).
    """
    unknown = set(changes) - set(LIMIT_FIELDS)
    if unknown:
        raise ValueError(f"unknown limits: {sorted(unknown)}")
    with transaction.atomic():
        limits, _ = ProjectLimits.objects.select_for_update().get_or_create(
            project=project, mode=mode
        )
        for field, value in changes.items():
            if isinstance(value, int) and value < 0:
                raise DjangoValidationError(f"{field} must be a non-negative integer.")
            setattr(limits, field, value)
        limits.full_clean()
        limits.save()
    return limits
