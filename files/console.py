"""The staff console's file pages: a folder browser per project and mode, and what a file's
page shows besides its fields (previews, downloads, events, deliveries).

Folders are the API's (``child_folders``), and a folder's files are read as the listing reads
them: the ``file_path_prefix`` index, newest first, a keyset cursor after the last row (never
an OFFSET). Bytes reach the browser only through signed URLs of the store: the console never
serves a file's bytes itself, and only types that browsers show safely (sniffed from the
bytes, never the declared type) are shown inline.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.functional import cached_property
from rest_framework import serializers

from accounts.models import ApiKey, Project
from accounts.tenancy import Tenant
from files.models import File, FileVersion, StoredObject
from files.selectors import FolderRow, child_folders
from files.validation import clean_path
from storage_service import objectstore

# Previews live a short while: long enough to look, not long enough to share.
PREVIEW_SECONDS = 600
FOLDER_PAGE = 50
MAX_FOLDERS = 200
# A list thumbnail is the original bytes: only small images are shown as one.
THUMBNAIL_MAX_BYTES = 5 * 1024 * 1024

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
        key=stored.storage_key, expires_in=PREVIEW_SECONDS, filename=filename
    ).url


def preview_url(stored: StoredObject) -> str | None:
    """A short-lived inline URL, only for a type browsers show without running anything; the
    store answers with the sniffed type, never the declared one, and the service's other
    download headers."""
    if preview_kind(stored.sniffed_type) is None or stored.sniffed_type is None:
        return None
    return objectstore.signed_get_url(
        key=stored.storage_key,
        signed_at=timezone.now(),
        expires_in=PREVIEW_SECONDS,
        response_headers={
            "response-content-disposition": "inline",
            "response-content-type": stored.sniffed_type,
            "response-cache-control": objectstore.DOWNLOAD_CACHE_CONTROL,
            "response-content-encoding": objectstore.DOWNLOAD_CONTENT_ENCODING,
            "response-content-language": objectstore.DOWNLOAD_CONTENT_LANGUAGE,
        },
    )


def thumbnail_url(file: File) -> str | None:
    """The list's thumbnail: small images only (the original bytes, signed)."""
    stored = file.current_object
    if (
        file.status != File.Status.UPLOADED
        or preview_kind(file.sniffed_type) != "image"
        or stored.size is None
        or stored.size > THUMBNAIL_MAX_BYTES
    ):
        return None
    return preview_url(stored)


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


@dataclass(frozen=True)
class VersionLink:
    version: FileVersion
    download: str
    preview: str | None


def version_links(file: File) -> list[VersionLink]:
    """Every published version, newest first, each with its download (and preview)."""
    versions = (
        FileVersion.objects.filter(file=file).select_related("stored_object").order_by("-version")
    )
    return [
        VersionLink(
            version=v,
            download=download_url(v.stored_object, file.filename),
            preview=preview_url(v.stored_object),
        )
        for v in versions
        if v.stored_object.purged_at is None
    ]


def file_preview(file: File) -> dict[str, Any]:
    """The current bytes as the page shows them: a preview (inline kinds only) and a
    download, or why there is none."""
    if file.status != File.Status.UPLOADED:
        return {"reason": f"The file is {file.status}: no bytes to show."}
    kind = preview_kind(file.sniffed_type)
    stored = file.current_object
    return {
        "kind": kind,
        "url": preview_url(stored) if kind else None,
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
