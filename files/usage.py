"""What files stores for a tenant (project and mode): for ``GET /v1/usage``, the operators'
usage page (accounts/usage.py) and the storage quota (files/services/limits.py).

The bytes are what the store holds: the sizes of the tenant's live objects (every version of
every file, the trash until it is purged, variant results) and of its discarded ones (still
in the store until the purge sweep removes them). A copy shares its source's object, so it
counts once. Pending objects (uploads not yet verified) hold no counted bytes; for the quota
they reserve their declared size until they complete, fail or expire.

Per object row (files_storedobject) of the tenant:

- held bytes: ``declared_size`` when pending, ``size`` (0 when unknown) when live or
  discarded, nothing when purged;
- stored bytes and objects: ``size`` and 1 when live or discarded with a known size.

These sums are kept, not computed on each read: triggers on files_storedobject (migration
0012) insert one files_usagedelta row per tenant a statement changes, with what it changed,
and a tenant's usage is the sum of its delta rows (an index-only scan of a few rows). The
fold sweep (``usage_fold``) replaces a tenant's rows by their sum now and then, so the rows
stay few; ``usage_recount`` (``manage.py recount_usage``) recomputes them from the objects.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Count, Sum
from django.db.models.functions import Coalesce

from accounts.tenancy import Tenant
from accounts.usage import Stored
from files.models import File, UsageDelta


def _deltas(project_id: str, mode: str) -> dict[str, int]:
    totals = UsageDelta.objects.filter(project_id=project_id, mode=mode).aggregate(
        held=Coalesce(Sum("held_bytes"), 0),
        stored=Coalesce(Sum("stored_bytes"), 0),
        objects=Coalesce(Sum("stored_objects"), 0),
    )
    return {name: int(value) for name, value in totals.items()}


def project_stored(*, tenant: Tenant) -> Stored:
    """accounts' ``project_storage`` hook (registered in FilesConfig.ready): the bytes in the
    store, in how many objects, how many uploaded files (not deleted) the tenant has, and the
    size of the largest.

    The bytes and objects are the tenant's delta rows; the files are counted (an index-only
    scan of file_list_status): usage is read rarely and under no lock, and counting them
    spares every statement on files_file, folder jobs' included, a trigger."""
    totals = _deltas(tenant.project_id, tenant.mode)
    uploaded = File.objects.for_tenant(tenant).filter(status=File.Status.UPLOADED)
    files = uploaded.aggregate(n=Count("*"))
    # The largest from the top of file_list_size (project, mode, size, id), read backwards.
    largest = uploaded.order_by("-size", "-id").values_list("size", flat=True).first()
    return Stored(
        bytes=totals["stored"],
        objects=totals["objects"],
        files=files["n"],
        largest_file=largest or 0,
    )


def held_bytes(*, tenant: Tenant) -> int:
    """The bytes in the store plus the declared sizes of pending uploads: what the storage
    quota counts. A sum over the tenant's few delta rows (index-only, usagedelta_tenant)."""
    return _deltas(tenant.project_id, tenant.mode)["held"]


# --- Folding and recounting ----------------------------------------------------------------

# One lock per tenant for whoever rewrites its delta rows (a fold, a recount), never taken by
# the triggers: writers of objects never wait on it.
_REWRITE_LOCK = "hashtextextended('usage:' || %s || ':' || %s, 0)"

_FOLD = """
WITH folded AS (
    DELETE FROM files_usagedelta WHERE project_id = %s AND mode = %s
    RETURNING held_bytes, stored_bytes, stored_objects
)
INSERT INTO files_usagedelta (project_id, mode, held_bytes, stored_bytes, stored_objects)
SELECT %s, %s, sum(held_bytes), sum(stored_bytes), sum(stored_objects) FROM folded
HAVING sum(held_bytes) <> 0 OR sum(stored_bytes) <> 0 OR sum(stored_objects) <> 0
"""


def usage_fold(*, max_tenants: int) -> int:
    """The fold sweep: the tenants with the most delta rows (at most ``max_tenants``, more
    than one row each) get their rows replaced by one row of their sum. Returns how many.

    One short transaction per tenant: ``DELETE ... RETURNING`` takes the rows committed when
    it starts (rows inserted meanwhile by writers are not touched, and writers never wait on
    rows they do not touch), and the sum of what it deleted is inserted as one row, at the
    same commit: a reader sees either the rows or their sum. The tenant's rewrite lock is only
    tried: a tenant another fold or a recount is rewriting is left to it, so two folds never
    wait on each other's deleted rows (nor deadlock deleting them in different orders).
    """
    tenants = list(
        UsageDelta.objects.values_list("project_id", "mode")
        .annotate(rows=Count("*"))
        .filter(rows__gt=1)
        .order_by("-rows")[:max_tenants]
    )
    folded = 0
    for project_id, mode, _ in tenants:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_try_advisory_xact_lock({_REWRITE_LOCK})", [project_id, mode])
            if not cursor.fetchone()[0]:
                continue
            cursor.execute(_FOLD, [project_id, mode, project_id, mode])
            folded += 1
    return folded


@dataclass(frozen=True)
class Drift:
    project_id: str
    mode: str
    kept: tuple[int, int, int]  # held bytes, stored bytes, stored objects: the delta rows' sums
    fresh: tuple[int, int, int]  # the same, summed over the objects


# Both sums in one statement, so from one snapshot: a transaction's object changes and its
# delta rows commit together, so in any snapshot the rows' sum equals the objects' sum, unless
# something wrote the rows (or the objects, with the triggers off) by hand.
_SUMS = """
SELECT o.held, o.stored, o.objects, d.held, d.stored, d.objects
FROM (
    SELECT coalesce(sum(CASE WHEN state = 'pending' THEN declared_size
                             ELSE coalesce(size, 0) END), 0),
           coalesce(sum(size) FILTER (WHERE state <> 'pending' AND size IS NOT NULL), 0),
           count(*) FILTER (WHERE state <> 'pending' AND size IS NOT NULL)
    FROM files_storedobject
    WHERE project_id = %s AND mode = %s AND state IN ('pending', 'live', 'discarded')
) AS o (held, stored, objects), (
    SELECT coalesce(sum(held_bytes), 0), coalesce(sum(stored_bytes), 0),
           coalesce(sum(stored_objects), 0)
    FROM files_usagedelta WHERE project_id = %s AND mode = %s
) AS d (held, stored, objects)
"""

_TENANTS = """
SELECT DISTINCT project_id, mode FROM files_storedobject
WHERE state IN ('pending', 'live', 'discarded') {only}
UNION
SELECT DISTINCT project_id, mode FROM files_usagedelta WHERE true {only}
ORDER BY project_id, mode
"""


def usage_recount(*, project_id: str | None = None, fix: bool = True) -> list[Drift]:
    """Recompute each tenant's usage (of ``project_id`` only, when given) from its objects;
    return the tenants whose delta rows said otherwise and, with ``fix``, correct them.

    Exact with writers at work, and without making them wait: the difference between the
    objects' sum and the rows' sum, read from one snapshot, is what the rows lack (writers'
    changes since add their own rows), so the fix inserts that difference as one more row,
    then folds the tenant's rows. Each tenant is one transaction under its rewrite lock (one
    recount at a time; a fold leaves the tenant alone), taken before the sums are read.
    """
    only = "AND project_id = %s" if project_id is not None else ""
    with connection.cursor() as cursor:
        cursor.execute(
            _TENANTS.format(only=only), [project_id, project_id] if project_id is not None else []
        )
        tenants = cursor.fetchall()
    drifts = []
    for tenant_project, mode in tenants:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_xact_lock({_REWRITE_LOCK})", [tenant_project, mode])
            cursor.execute(_SUMS, [tenant_project, mode, tenant_project, mode])
            row = [int(value) for value in cursor.fetchone()]
            fresh, kept = (row[0], row[1], row[2]), (row[3], row[4], row[5])
            if kept == fresh:
                continue
            drifts.append(Drift(tenant_project, mode, kept, fresh))
            if not fix:
                continue
            UsageDelta.objects.create(
                project_id=tenant_project,
                mode=mode,
                held_bytes=fresh[0] - kept[0],
                stored_bytes=fresh[1] - kept[1],
                stored_objects=fresh[2] - kept[2],
            )
            cursor.execute(_FOLD, [tenant_project, mode, tenant_project, mode])
    return drifts
