"""The staff console's project page: usage over the last 30 days, drawn server side.

Bandwidth per day is ``BandwidthUsage`` (one row per tenant and UTC day). Stored bytes and
files have no per-day record of their own, so ``UsageSnapshot`` keeps the day's last count:
the hourly sweep writes every tenant's, and opening a project's page writes its own. A day
without a snapshot is drawn as the day before it (usage does not vanish between counts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import QuerySet
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from accounts.models import ApiKey, BandwidthUsage, Project, UsageSnapshot
from accounts.tenancy import Tenant
from accounts.usage import RECENT_DAYS, ProjectUsage, project_usage


def snapshot_record(tenant: Tenant, usage: ProjectUsage | None = None) -> ProjectUsage:
    """Today's snapshot of the tenant (an upsert on its unique row): the day's last count."""
    usage = usage or project_usage(tenant)
    UsageSnapshot.objects.update_or_create(
        project=tenant.project,
        mode=tenant.mode,
        day=timezone.now().date(),
        defaults={"storage_bytes": usage.storage_bytes, "files": usage.files},
    )
    return usage


def snapshot_all(projects: QuerySet[Project] | None = None) -> int:
    """The sweep: today's snapshot of every tenant (project and mode). Returns how many."""
    count = 0
    for project in (projects or Project.objects.all()).order_by("id").iterator():
        for mode, _ in ApiKey.Environment.choices:
            snapshot_record(Tenant(project=project, mode=mode))
            count += 1
    return count


@dataclass(frozen=True)
class Series:
    title: str
    values: list[int]
    human: bool  # bytes: shown with filesizeformat


@dataclass(frozen=True)
class History:
    days: list[date]
    storage: Series
    files: Series
    bandwidth: Series


def history(tenant: Tenant, today: date | None = None) -> History:
    """The last RECENT_DAYS days (today included) of one tenant: two reads of one unique
    index each (at most RECENT_DAYS rows, plus the last snapshot before them)."""
    today = today or timezone.now().date()
    since = today - timedelta(days=RECENT_DAYS - 1)
    days = [since + timedelta(days=i) for i in range(RECENT_DAYS)]
    owned = {"project_id": tenant.project_id, "mode": tenant.mode}
    bandwidth = dict(
        BandwidthUsage.objects.filter(**owned, day__gte=since).values_list("day", "bytes")
    )
    snapshots = {
        row.day: row
        for row in UsageSnapshot.objects.filter(**owned, day__gte=since).only(
            "day", "storage_bytes", "files"
        )
    }
    before = (
        UsageSnapshot.objects.filter(**owned, day__lt=since)
        .order_by("-day")
        .only("storage_bytes", "files")
        .first()
    )
    stored, files = [], []
    last_bytes = before.storage_bytes if before else 0
    last_files = before.files if before else 0
    for day in days:
        if day in snapshots:
            last_bytes, last_files = snapshots[day].storage_bytes, snapshots[day].files
        stored.append(last_bytes)
        files.append(last_files)
    return History(
        days=days,
        storage=Series("Stored bytes", stored, human=True),
        files=Series("Files", files, human=False),
        bandwidth=Series("Bandwidth per day", [bandwidth.get(d, 0) for d in days], human=True),
    )


WIDTH, PANEL_HEIGHT, LEFT, GAP = 900, 110, 90, 34


def _label(series: Series, value: int) -> str:
    return filesizeformat(value) if series.human else f"{value:,}"


def chart_svg(data: History) -> SafeString:
    """Three panels (stored bytes, files, bandwidth per day), one column per day, as inline
    SVG: every text in it is escaped by format_html."""
    panels = [data.storage, data.files, data.bandwidth]
    height = len(panels) * (PANEL_HEIGHT + GAP) + 20
    step = (WIDTH - LEFT - 10) / len(data.days)
    parts: list[SafeString] = []
    for index, series in enumerate(panels):
        top = index * (PANEL_HEIGHT + GAP) + GAP - 10
        peak = max(series.values)
        scale = peak or 1
        parts.append(
            format_html(
                '<text x="0" y="{}" class="title">{} (now {}, peak {})</text>',
                top - 6,
                series.title,
                _label(series, series.values[-1]),
                _label(series, peak),
            )
        )
        parts.append(
            format_html(
                '<line x1="{}" y1="{}" x2="{}" y2="{}" class="axis"/>',
                LEFT,
                top + PANEL_HEIGHT,
                WIDTH - 10,
                top + PANEL_HEIGHT,
            )
        )
        parts.append(
            format_html('<text x="0" y="{}" class="tick">{}</text>', top + 10, _label(series, peak))
        )
        parts.append(format_html('<text x="0" y="{}" class="tick">0</text>', top + PANEL_HEIGHT))
        parts.append(
            format_html_join(
                "",
                '<rect x="{}" y="{}" width="{}" height="{}" class="bar s{}">'
                "<title>{}: {}</title></rect>",
                (
                    (
                        f"{LEFT + i * step + 1:.1f}",
                        f"{top + PANEL_HEIGHT - value / scale * PANEL_HEIGHT:.1f}",
                        f"{max(step - 2, 1):.1f}",
                        f"{value / scale * PANEL_HEIGHT:.1f}",
                        index,
                        day.isoformat(),
                        _label(series, value),
                    )
                    for i, (day, value) in enumerate(zip(data.days, series.values, strict=True))
                ),
            )
        )
    parts.append(
        format_html(
            '<text x="{}" y="{}" class="tick">{}</text><text x="{}" y="{}" class="tick"'
            ' text-anchor="end">{}</text>',
            LEFT,
            height - 4,
            data.days[0].isoformat(),
            WIDTH - 10,
            height - 4,
            data.days[-1].isoformat(),
        )
    )
    return format_html(
        '<svg class="chart" id="usage-chart" role="img" viewBox="0 0 {} {}" width="{}" height="{}"'
        ' xmlns="http://www.w3.org/2000/svg"><title>Usage over the last {} days</title>'
        "<style>.title{{font:bold 13px sans-serif;fill:currentColor}}"
        ".tick{{font:11px sans-serif;fill:#777}}.axis{{stroke:#999}}"
        ".s0{{fill:#2d7dd2}}.s1{{fill:#3aa675}}.s2{{fill:#e08e2b}}</style>{}</svg>",
        WIDTH,
        height,
        WIDTH,
        height,
        RECENT_DAYS,
        SafeString("".join(parts)),
    )


# --- Keys on the project's page --------------------------------------------------------------


@dataclass(frozen=True)
class KeyRow:
    id: str
    label: str  # what identifies the key to staff (a display prefix, an id); never a secret
    mode: str
    name: str
    created_at: datetime
    revoked_at: datetime | None
    url: str | None = None  # the key's own admin page


@dataclass(frozen=True)
class KeyKind:
    """One kind of credential the project's page lists, issues and revokes (API keys here;
    other apps register theirs with ``key_kind``, as models register with the admin site).

    ``issue`` returns the secret, shown once; ``revoke`` revokes one key of the project, and
    both refuse with an ApiError the page shows. Issuing needs the model's add permission,
    revoking its change permission (superusers hold both)."""

    slug: str
    title: str
    rows: Callable[[Project], list[KeyRow]]
    issue: Callable[[Project, str, str], str]  # (project, mode, name) -> secret
    revoke: Callable[[Project, str], str]  # (project, key id) -> the key's mode
    add_permission: str
    change_permission: str
    named: bool = True  # the issue form asks for a name


key_kinds: dict[str, KeyKind] = {}


def key_kind(kind: KeyKind) -> KeyKind:
    key_kinds[kind.slug] = kind
    return kind
