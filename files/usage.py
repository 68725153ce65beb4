"""What files stores for a tenant (project and mode), for the operators' usage page
(accounts/usage.py).

The sum of the sizes of the project's *live* stored objects. A copy shares its source's
object, so it counts once: the bytes exist once in the store. Variant results are objects of
their own and count. Pending objects (uploads not yet verified) and discarded ones (waiting
for the purge sweep) do not: they are not the project's files.
"""

from __future__ import annotations

from django.db.models import Count, Sum
from django.db.models.functions import Coalesce

from accounts.tenancy import Tenant
from accounts.usage import Stored
from files.models import StoredObject


def project_stored(*, tenant: Tenant) -> Stored:
    """accounts' ``project_storage`` hook (registered in FilesConfig.ready); an index-only
    scan of storedobject_live_project (project, mode)."""
    live = StoredObject.objects.filter(
        project_id=tenant.project_id, mode=tenant.mode, state=StoredObject.State.LIVE
    )
    # COUNT(*), not COUNT(id): the index holds no id, and counting it made this an index scan
    # that visits every row.
    totals = live.aggregate(size=Coalesce(Sum("size"), 0), count=Count("*"))
    return Stored(bytes=totals["size"], objects=totals["count"])
