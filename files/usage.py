"""What files stores for a tenant (project and mode): for ``GET /v1/usage``, the operators'
usage page (accounts/usage.py) and the storage quota (files/services/limits.py).

The bytes are what the store holds: the sizes of the tenant's live objects (every version of
every file, the trash until it is purged, variant results) and of its discarded ones (still
in the store until the purge sweep removes them). A copy shares its source's object, so it
counts once. Pending objects (uploads not yet verified) hold no counted bytes; for the quota
they reserve their declared size until they complete, fail or expire.
"""

from __future__ import annotations

from django.db.models import Case, Count, F, Q, Sum, When
from django.db.models.functions import Coalesce

from accounts.tenancy import Tenant
from accounts.usage import Stored
from files.models import File, StoredObject

State = StoredObject.State
_IN_STORE = Q(state__in=[State.LIVE, State.DISCARDED], size__isnull=False)


def project_stored(*, tenant: Tenant) -> Stored:
    """accounts' ``project_storage`` hook (registered in FilesConfig.ready): the bytes in the
    store, in how many objects, and how many uploaded files (not deleted) the tenant has.
    One index-only scan of storedobject_held and one of file_list_status."""
    totals = StoredObject.objects.filter(
        _IN_STORE, project_id=tenant.project_id, mode=tenant.mode
    ).aggregate(size=Coalesce(Sum("size"), 0), count=Count("*"))
    files = (
        File.objects.for_tenant(tenant).filter(status=File.Status.UPLOADED).aggregate(n=Count("*"))
    )
    return Stored(bytes=totals["size"], objects=totals["count"], files=files["n"])


def held_bytes(*, tenant: Tenant) -> int:
    """The bytes in the store plus the declared sizes of pending uploads: what the storage
    quota counts. One index-only scan of storedobject_held."""
    totals = StoredObject.objects.filter(
        project_id=tenant.project_id,
        mode=tenant.mode,
        state__in=[State.PENDING, State.LIVE, State.DISCARDED],
    ).aggregate(
        held=Coalesce(
            Sum(
                Case(
                    When(state=State.PENDING, then=F("declared_size")),
                    default=Coalesce(F("size"), 0),
                )
            ),
            0,
        )
    )
    return int(totals["held"])
