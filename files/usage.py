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
from django.db.models import Case, Count, F, Q, Sum, When
from django.db.models.functions import Coalesce

from accounts.tenancy import Tenant
from accounts.usage import Stored
from files.models import File, StoredObject, UsageDelta

State = StoredObject.State
_HELD = [State.PENDING, State.LIVE, State.DISCARDED]
_IN_STORE = Q(state__in=[State.LIVE, State.DISCARDED], size__isnull=False)


def _deltas(project_id: str, mode: str) -> dict[str, int]:
    totals = UsageDelta.objects.filter(project_id=project_id, mode=mode).aggregate(
        held=Coalesce(Sum("held_bytes"), 0),
        stored=Coalesce(Sum("stored_bytes"), 0),
        objects=Coalesce(Sum("stored_objects"), 0),
    )
    return {name: int(value) for name, value in totals.items()}


def project_stored(*, tenant: Tenant) -> Stored:
    """accounts' ``project_storage`` hook (registered in FilesConfig.ready): the bytes in the
    store, in how many objects, and how many uploaded files (not deleted) the tenant has.

    The bytes and objects are the tenant's delta rows; the files are counted (an index-only
    scan of file_list_status): usage is read rarely and under no lock, and counting them
    spares every statement on files_file, folder jobs' included, a trigger."""
    totals = _deltas(tenant.project_id, tenant.mode)
    files = (
        File.objects.for_tenant(tenant).filter(status=File.Status.UPLOADED).aggregate(n=Count("*"))
    )
    return Stored(bytes=totals["stored"], objects=totals["objects"], files=files["n"])


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


def _fresh(project_id: str, mode: str) -> tuple[int, int, int]:
    objects = StoredObject.objects.filter(project_id=project_id, mode=mode, state__in=_HELD)
    totals = objects.aggregate(
        held=Coalesce(
            Sum(
                Case(
                    When(state=State.PENDING, then=F("declared_size")),
                    default=Coalesce(F("size"), 0),
                )
            ),
            0,
        ),
        stored=Coalesce(Sum("size", filter=_IN_STORE), 0),
        objects=Count("pk", filter=_IN_STORE),
    )
    return int(totals["held"]), int(totals["stored"]), int(totals["objects"])


def usage_recount(*, project_id: str | None = None, fix: bool = True) -> list[Drift]:
    """Recompute each tenant's usage (of ``project_id`` only, when given) from its objects;
    return the tenants whose delta rows said otherwise and, with ``fix``, rewrite their rows
    as one row of the truth.

    Exact against concurrent writers: each tenant is counted with files_storedobject locked
    in SHARE mode (every write of objects, any tenant's, waits for that transaction; it
    waits for those in flight) and under the tenant's rewrite lock (no fold meanwhile).
    """
    objects = StoredObject.objects.filter(state__in=_HELD)
    deltas = UsageDelta.objects.all()
    if project_id is not None:
        objects = objects.filter(project_id=project_id)
        deltas = deltas.filter(project_id=project_id)
    tenants = sorted(
        set(objects.values_list("project_id", "mode").distinct())
        | set(deltas.values_list("project_id", "mode").distinct())
    )
    drifts = []
    for tenant_project, mode in tenants:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_xact_lock({_REWRITE_LOCK})", [tenant_project, mode])
            cursor.execute("LOCK TABLE files_storedobject IN SHARE MODE")
            kept = _deltas(tenant_project, mode)
            counted = (kept["held"], kept["stored"], kept["objects"])
            fresh = _fresh(tenant_project, mode)
            if counted == fresh:
                continue
            drifts.append(Drift(tenant_project, mode, counted, fresh))
            if not fix:
                continue
            UsageDelta.objects.filter(project_id=tenant_project, mode=mode).delete()
            if any(fresh):
                UsageDelta.objects.create(
                    project_id=tenant_project,
                    mode=mode,
                    held_bytes=fresh[0],
                    stored_bytes=fresh[1],
                    stored_objects=fresh[2],
                )
    return drifts
