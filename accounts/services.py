from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from accounts.keys import display_prefix, generate_key, hash_key
from accounts.models import ApiKey, BandwidthUsage, Organization, Project
from accounts.scopes import parse_scopes
from accounts.tenancy import Tenant


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    raw_key: str  # shown once, never stored


def project_create(*, name: str, organization_name: str | None = None) -> Project:
    """Create a project, in the named organization (created if new) or in one of its own name."""
    with transaction.atomic():
        organization, _ = Organization.objects.get_or_create(name=organization_name or name)
        return Project.objects.create(organization=organization, name=name)


def api_key_issue(
    *, project: Project, environment: str, name: str = "", scopes: Iterable[str] | None = None
) -> IssuedKey:
    """Issue a key: a full ``sk_`` key without ``scopes``, else a restricted ``rk_`` key that
    holds only those (an unknown scope is refused with ValueError)."""
    if environment not in ApiKey.Environment.values:
        raise ValueError(f"environment must be one of {ApiKey.Environment.values}")
    held = None if scopes is None else parse_scopes(scopes)
    raw_key = generate_key(environment, restricted=held is not None)
    api_key = ApiKey.objects.create(
        project=project,
        environment=environment,
        key_hash=hash_key(raw_key),
        prefix=display_prefix(raw_key),
        name=name,
        scopes=held,
    )
    return IssuedKey(api_key=api_key, raw_key=raw_key)


def api_key_revoke(*, key_id: str) -> ApiKey:
    """Revoke a key at once; revoking a revoked key keeps its first revocation time."""
    with transaction.atomic():
        api_key = ApiKey.objects.select_for_update().get(id=key_id)
        if api_key.revoked_at is None:
            api_key.revoked_at = timezone.now()
            api_key.save(update_fields=["revoked_at"])
        return api_key


_BANDWIDTH_UPSERT = (
    f"INSERT INTO {BandwidthUsage._meta.db_table} (project_id, mode, day, bytes, downloads) "
    "VALUES (%s, %s, (now() AT TIME ZONE 'UTC')::date, %s, 1) "
    "ON CONFLICT (project_id, mode, day) DO UPDATE SET "
    f"bytes = {BandwidthUsage._meta.db_table}.bytes + EXCLUDED.bytes, "
    f"downloads = {BandwidthUsage._meta.db_table}.downloads + 1"
)


def bandwidth_record(*, tenant: Tenant, size: int) -> None:
    """Add one issued download URL of ``size`` bytes to today's (UTC) usage of the tenant
    (project and mode).

    One statement, no read first: concurrent downloads serialise on the day's row inside the
    database instead of racing a read-modify-write. Call it last in the transaction that
    issues the URL, so the row lock is held for as short a time as possible.
    """
    with connection.cursor() as cursor:
        cursor.execute(_BANDWIDTH_UPSERT, [tenant.project_id, tenant.mode, size])
