"""What files stores for a tenant (project and mode): for ``GET /v1/usage``, the operators'
usage page (accounts/usage.py) and the storage quota (files/services/limits.py).

The bytes are what the store holds: the sizes of the tenant's live objects (every version of
every file, the trash until it is purged, variant results) and of its discarded ones (still
in the store until the purge sweep removes them). A copy shares its source's object, so it
counts once. Pending objects (uploads not yet verified) hold no counted bytes; for the quota
they reserve their declared size until they complete, fail or expire.

The figures are read from the tenant's usage counters (UsageCounter: at most SLOTS rows),
which the database's triggers keep equal to those sums in every transaction; reading them
costs the same for ten objects as for millions. ``usage_recount`` computes the sums from
the rows themselves and writes them back (``manage.py recount_usage``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Sum
from django.db.models.functions import Coalesce

from accounts.tenancy import Tenant
from accounts.usage import Stored
from files.models import UsageCounter


def _counted(tenant: Tenant) -> dict[str, int]:
    return UsageCounter.objects.filter(project_id=tenant.project_id, mode=tenant.mode).aggregate(
        stored_bytes=Coalesce(Sum("stored_bytes"), 0),
        stored_objects=Coalesce(Sum("stored_objects"), 0),
        pending_bytes=Coalesce(Sum("pending_bytes"), 0),
        uploaded_files=Coalesce(Sum("uploaded_files"), 0),
    )


def project_stored(*, tenant: Tenant) -> Stored:
    """accounts' ``project_storage`` hook (registered in FilesConfig.ready): the bytes in the
    store, in how many objects, and how many uploaded files (not deleted) the tenant has."""
    counted = _counted(tenant)
    return Stored(
        bytes=int(counted["stored_bytes"]),
        objects=int(counted["stored_objects"]),
        files=int(counted["uploaded_files"]),
    )


def held_bytes(*, tenant: Tenant) -> int:
    """The bytes in the store plus the declared sizes of pending uploads: what the storage
    quota counts."""
    counted = _counted(tenant)
    return int(counted["stored_bytes"]) + int(counted["pending_bytes"])


# The sums the triggers keep, computed from the rows: per tenant, optionally of one project.
_FRESH = """
SELECT project_id, mode, sum(stored_bytes), sum(stored_objects), sum(pending_bytes),
       sum(uploaded_files)
FROM (
    SELECT project_id, mode,
           CASE WHEN state <> 'pending' AND size IS NOT NULL THEN size ELSE 0 END,
           CASE WHEN state <> 'pending' AND size IS NOT NULL THEN 1 ELSE 0 END,
           CASE WHEN state = 'pending' THEN declared_size ELSE 0 END,
           0
    FROM files_storedobject
    WHERE state IN ('pending', 'live', 'discarded') AND (%(project)s::text IS NULL
                                                          OR project_id = %(project)s)
    UNION ALL
    SELECT project_id, mode, 0, 0, 0, 1 FROM files_file
    WHERE status = 'uploaded' AND (%(project)s::text IS NULL OR project_id = %(project)s)
) AS counted (project_id, mode, stored_bytes, stored_objects, pending_bytes, uploaded_files)
GROUP BY project_id, mode
"""

_COUNTED = """
SELECT project_id, mode, sum(stored_bytes), sum(stored_objects), sum(pending_bytes),
       sum(uploaded_files)
FROM files_usagecounter WHERE %(project)s::text IS NULL OR project_id = %(project)s
GROUP BY project_id, mode
"""

Figures = tuple[int, int, int, int]  # stored bytes, stored objects, pending bytes, files


@dataclass(frozen=True)
class Drift:
    project_id: str
    mode: str
    counted: Figures
    fresh: Figures


def usage_recount(*, project_id: str | None = None, fix: bool = True) -> list[Drift]:
    """Compare the counters with the sums of the rows (of one project, or of all) and, with
    ``fix``, replace them by those sums. Returns the tenants whose counters differed.

    The object and file tables are locked against writes (SHARE) for the time of the count,
    so no change falls between the sums and the counters written from them; reads go on.
    """
    zero: Figures = (0, 0, 0, 0)
    params = {"project": project_id}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("LOCK TABLE files_storedobject, files_file IN SHARE MODE")
        cursor.execute(_FRESH, params)
        fresh = {(r[0], r[1]): tuple(int(v) for v in r[2:]) for r in cursor.fetchall()}
        cursor.execute(_COUNTED, params)
        counted = {(r[0], r[1]): tuple(int(v) for v in r[2:]) for r in cursor.fetchall()}
        drifts = [
            Drift(
                project_id=key[0],
                mode=key[1],
                counted=counted.get(key, zero),  # type: ignore[arg-type]
                fresh=fresh.get(key, zero),  # type: ignore[arg-type]
            )
            for key in sorted(fresh.keys() | counted.keys())
            if counted.get(key, zero) != fresh.get(key, zero)
        ]
        if fix:
            for drift in drifts:
                UsageCounter.objects.filter(project_id=drift.project_id, mode=drift.mode).delete()
                UsageCounter.objects.create(
                    project_id=drift.project_id,
                    mode=drift.mode,
                    slot=0,
                    stored_bytes=drift.fresh[0],
                    stored_objects=drift.fresh[1],
                    pending_bytes=drift.fresh[2],
                    uploaded_files=drift.fresh[3],
                )
    return drifts
