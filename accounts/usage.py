"""Per-tenant usage for operators: bytes stored and download bandwidth, per project and mode.

Test and live are separate data, so their usage is counted and shown apart.

Storage is what the apps that store bytes answer to the ``project_storage`` hook (files: the
objects the store holds for the tenant, a shared copy once); accounts imports none of them.

Bandwidth is the bytes of download URLs issued (``BandwidthUsage``, one row per UTC day).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from django.db.models import OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import BandwidthUsage
from accounts.tenancy import Tenant
from storage_service.hooks import hook

RECENT_DAYS = 30


@dataclass(frozen=True)
class Stored:
    bytes: int
    objects: int
    files: int = 0
    largest_file: int = 0  # bytes of the largest file (what a file-size limit is held to)


@hook
def project_storage(*, tenant: Tenant) -> Stored:
    """What one app stores for ``tenant``: its bytes, in how many objects. files registers
    its answer in FilesConfig.ready; a receiver reads only that tenant's rows (an index)."""
    raise NotImplementedError  # a prototype: only the registered receivers are called


@dataclass(frozen=True)
class ProjectUsage:
    storage_bytes: int
    stored_objects: int
    files: int
    largest_file_bytes: int
    bandwidth_bytes: int
    downloads: int
    recent_bandwidth_bytes: int  # the last RECENT_DAYS days, today (UTC) included
    recent_downloads: int
    month: str  # this UTC month, YYYY-MM
    month_bandwidth_bytes: int


def recent_since(today: date | None = None) -> date:
    return (today or timezone.now().date()) - timedelta(days=RECENT_DAYS - 1)


def project_usage(tenant: Tenant) -> ProjectUsage:
    """One aggregate per storing app and one of bandwidth, each over one tenant's rows only
    (each served by an index that starts with (project, mode))."""
    stored = project_storage.send(tenant=tenant)
    since = recent_since()
    today = timezone.now().date()
    month_start = today.replace(day=1)
    bandwidth = BandwidthUsage.objects.filter(
        project_id=tenant.project_id, mode=tenant.mode
    ).aggregate(
        total_bytes=Coalesce(Sum("bytes"), 0),
        total_downloads=Coalesce(Sum("downloads"), 0),
        recent_bytes=Coalesce(Sum("bytes", filter=Q(day__gte=since)), 0),
        recent_downloads=Coalesce(Sum("downloads", filter=Q(day__gte=since)), 0),
        month_bytes=Coalesce(Sum("bytes", filter=Q(day__gte=month_start)), 0),
    )
    return ProjectUsage(
        storage_bytes=sum(s.bytes for s in stored),
        stored_objects=sum(s.objects for s in stored),
        files=sum(s.files for s in stored),
        largest_file_bytes=max((s.largest_file for s in stored), default=0),
        bandwidth_bytes=bandwidth["total_bytes"],
        downloads=bandwidth["total_downloads"],
        recent_bandwidth_bytes=bandwidth["recent_bytes"],
        recent_downloads=bandwidth["recent_downloads"],
        month=f"{today:%Y-%m}",
        month_bandwidth_bytes=bandwidth["month_bytes"],
    )


def recent_bandwidth_subquery() -> Coalesce:
    """The project's bandwidth of the last RECENT_DAYS days (both modes), as an annotation.

    One correlated subquery per listed row inside the changelist's single statement; each
    reads at most RECENT_DAYS rows of the (project, day) unique index, so a page of 100
    projects costs one query, not 100.
    """
    recent = (
        BandwidthUsage.objects.filter(project=OuterRef("pk"), day__gte=recent_since())
        .values("project")
        .annotate(total=Sum("bytes"))
        .values("total")
    )
    return Coalesce(Subquery(recent), 0)
