"""The staff console's file pages: a folder browser per project and mode, and what a file's
page shows besides its fields (previews, downloads, events, deliveries).

Folders are the API's (``child_folders``), and a folder's files are read as the listing reads
them: the ``file_path_prefix`` index, newest first, a keyset cursor after the last row (never
an OFFSET). The console never serves a file's bytes itself: previews and thumbnails are
delivery URLs signed with the console's own key (delivery/console.py), downloads signed URLs
of the store; only types that browsers show safely (sniffed from the bytes, never the
declared type) are previewed, anything else (SVG, HTML, …) is a download.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest
from django.utils.dateparse import parse_datetime
from django.utils.functional import cached_property
from rest_framework import serializers

from accounts.models import ApiKey, Project
from accounts.tenancy import Tenant
from files.models import File, StoredObject
from files.selectors import FolderRow, child_folders
from files.validation import clean_path
from storage_service import objectstore

# Downloads live a short while: long enough to start, not long enough to share.
DOWNLOAD_SECONDS = 600
FOLDER_PAGE = 50
MAX_FOLDERS = 200

# What a browser shows inline without running anything: raster images, audio, video, PDF
# (in its own viewer, from the store's origin). SVG and HTML can carry script: download only.
INLINE_TYPES = {
    "image/png": "image",
    "image/jpeg": "image",
    "image/gif": "image",
    "image/webp": "image",
    "image/avif": "image",
    "video/mp4": "video",
    "video/webm": "video",
    "video/ogg": "video",
    "audio/mpeg": "audio",
    "audio/ogg": "audio",
    "audio/wav": "audio",
    "audio/x-wav": "audio",
    "audio/flac": "audio",
    "audio/webm": "audio",
    "application/pdf": "pdf",
}

FAMILIES = ("image", "video", "audio", "text", "application", "font", "model", "multipart")


def preview_kind(sniffed_type: str | None) -> str | None:
    """How the page shows the bytes: image, video, audio or pdf; None: download only."""
    return INLINE_TYPES.get((sniffed_type or "").lower())


def download_url(stored: StoredObject, filename: str) -> str:
    """A short-lived attachment URL of the stored bytes, under the file's name."""
    return objectstore.presign_get(
        key=stored.storage_key, expires_in=DOWNLOAD_SECONDS, filename=filename
    ).url


class PreviewSigner(Protocol):
    """Signs the delivery URLs the console shows a file through (delivery/console.py)."""

    def url(self, file: File, *, version: int | None = None, thumbnail: bool = False) -> str:
        """The current version, a pinned version, or the file's thumbnail."""
        ...

    def thumbnails(self, files: list[File]) -> dict[str, str]:
        """The ready thumbnails of these files' current versions, by file id."""
        ...


# The app that signs delivery URLs registers how (delivery/admin.py), as a model registers
# with the admin site: files imports none of it. Without one, pages offer downloads only.
_preview_signers: list[Callable[[HttpRequest], PreviewSigner]] = []


def preview_signer(factory: Callable[[HttpRequest], PreviewSigner]) -> None:
    if factory not in _preview_signers:
        _preview_signers.append(factory)


def signer_for(request: HttpRequest) -> PreviewSigner | None:
    return _preview_signers[-1](request) if _preview_signers else None


@dataclass(frozen=True)
class Cursor:
    """The last row of a page: the next page starts after it (created_at DESC, id DESC)."""

    created_at: datetime
    id: str

    def encode(self) -> str:
        return f"{self.created_at.isoformat()}~{self.id}"

    @classmethod
    def decode(cls, value: str | None) -> Cursor | None:
        if not value or "~" not in value or len(value) > 100:
            return None
        when, _, file_id = value.partition("~")
        created_at = parse_datetime(when)
        return None if created_at is None else cls(created_at=created_at, id=file_id)


@dataclass(frozen=True)
class FolderPage:
    tenant: Tenant
    path: str | None
    crumbs: list[tuple[str, str]]  # (name, path) from the root
    folders: list[FolderRow]
    files: list[File]
    next_cursor: str | None
    error: str | None = None


def clean_folder(value: str | None) -> tuple[str | None, str | None]:
    """The folder asked for (None: the root), or the root and why the value was refused."""
    try:
        return clean_path(value), None
    except serializers.ValidationError as exc:
        return None, "; ".join(str(detail) for detail in exc.detail)


def folder_page(*, project: Project, mode: str, path: str | None, cursor: str | None) -> FolderPage:
    """One folder of a tenant: its child folders (by name) and a page of its files."""
    tenant = Tenant(project=project, mode=mode)
    tenant_files = File.objects.for_tenant(tenant)
    folders = list(child_folders(tenant_files, parent=path)[:MAX_FOLDERS])
    files = (
        tenant_files.visible()
        .filter(Q(path__isnull=True) if path is None else Q(path=path))
        .select_related("current_object")
        .order_by("-created_at", "-id")
    )
    after = Cursor.decode(cursor)
    if after is not None:
        files = files.filter(
            Q(created_at__lt=after.created_at) | Q(created_at=after.created_at, id__lt=after.id)
        )
    rows = list(files[: FOLDER_PAGE + 1])
    more = len(rows) > FOLDER_PAGE
    rows = rows[:FOLDER_PAGE]
    crumbs: list[tuple[str, str]] = []
    if path:
        parts = path.split("/")
        crumbs = [(part, "/".join(parts[: i + 1])) for i, part in enumerate(parts)]
    return FolderPage(
        tenant=tenant,
        path=path,
        crumbs=crumbs,
        folders=folders,
        files=rows,
        next_cursor=Cursor(rows[-1].created_at, rows[-1].id).encode() if more else None,
    )


def clean_mode(value: str | None) -> str:
    modes = {choice for choice, _ in ApiKey.Environment.choices}
    return value if value in modes else ApiKey.Environment.LIVE


def file_preview(file: File, signer: PreviewSigner | None) -> dict[str, Any]:
    """The current bytes as the page shows them: a preview (inline kinds only, through a
    delivery URL) and a download, or why there is none."""
    if file.status != File.Status.UPLOADED:
        return {"reason": f"The file is {file.status}: no bytes to show."}
    kind = preview_kind(file.sniffed_type) if signer is not None else None
    stored = file.current_object
    return {
        "kind": kind,
        "url": signer.url(file) if kind and signer is not None else None,
        "download": download_url(stored, file.filename),
        "reason": None
        if kind
        else f"{file.sniffed_type or 'An unknown type'} is offered as a download only.",
    }


class BoundedPaginator(Paginator):
    """The changelist's pages without counting every row: the count stops at
    ``MAX_LISTED`` (a ``LIMIT`` inside the ``COUNT``), so the pages reach that far and no
    further (no deep OFFSET either); beyond it, search, filter or browse a folder."""

    MAX_LISTED = 10_000

    @cached_property
    def count(self) -> int:
        rows: Any = self.object_list  # the changelist's queryset
        return int(rows[: self.MAX_LISTED].count())
