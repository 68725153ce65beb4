"""Changes to an uploaded file: rename, move, metadata, copy, download URL."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.services import bandwidth_record
from accounts.tenancy import Tenant
from events.models import Event
from files.events import record_file_event
from files.models import File, FileVersion
from files.services.common import (
    Status,
    lock_file,
    read_file,
)
from files.services.transitions import Selection, move_files
from storage_service import objectstore
from storage_service.errors import (
    FileNotUploaded,
)
from storage_service.timefmt import iso

# --- Changes to an uploaded file -----------------------------------------------------------


def file_update(*, tenant: Tenant, file_id: str, changes: dict[str, Any]) -> File:
    """Rename, move, replace metadata and/or set or clear the expiry (``expires_at``); one
    event per kind of change that happened (an expiry change has none: ``file.expired``
    tells when it takes effect), in that order: renamed, moved, metadata updated. A move is
    the transition a folder move makes (files/services/transitions.py)."""
    with transaction.atomic():
        file = lock_file(tenant, file_id)
        previous_filename = file.filename
        changed: list[str] = []
        if "filename" in changes and changes["filename"] != file.filename:
            file.filename = changes["filename"]
            changed.append("filename")
        if "metadata" in changes and changes["metadata"] != file.metadata:
            file.metadata = changes["metadata"]
            changed.append("metadata")
        if "expires_at" in changes and changes["expires_at"] != file.expires_at:
            file.expires_at = changes["expires_at"]
            changed.append("expires_at")
        moved = "path" in changes and changes["path"] != file.path
        if not changed and not moved:
            return file
        if changed:
            file.save(update_fields=[*changed, "updated_at"])
        if moved:
            # Every event of this change shows the file as it ends, the new path included.
            file.path = changes["path"]
        if "filename" in changed:
            record_file_event(Event.Type.FILE_RENAMED, file, previousFilename=previous_filename)
        if moved:
            rows = Selection("f.id = %s", [file.id])
            move_files(tenant=tenant, rows=rows, new_path=("%s::text", [file.path]))
            file.refresh_from_db(fields=["path", "updated_at"])
        if "metadata" in changed:
            record_file_event(Event.Type.FILE_METADATA_UPDATED, file, metadata=file.metadata)
        return file


def file_copy(
    *, tenant: Tenant, file_id: str, filename: str | None = None, path: Any = ...
) -> File:
    """A new file sharing the source's current stored object: no byte is copied.

    ``path`` left out keeps the source's folder; ``None`` means the root.
    """
    with transaction.atomic():
        source = lock_file(tenant, file_id)
        if source.status != Status.UPLOADED:
            raise FileNotUploaded(
                f"The file is {source.status}; only an uploaded file can be copied."
            )
        now = timezone.now()
        copy = File.objects.create(
            **tenant.owner(),
            filename=filename if filename is not None else source.filename,
            path=source.path if path is ... else path,
            content_type=source.content_type,
            size=source.size,
            status=Status.UPLOADED,
            metadata=source.metadata,
            checksum=source.checksum,
            sniffed_type=source.sniffed_type,
            current_object=source.current_object,
            uploaded_at=now,
        )
        FileVersion.objects.create(
            file=copy,
            version=1,
            stored_object=source.current_object,
            content_type=copy.content_type,
            size=copy.size,
            checksum=copy.checksum or "",
        )
        record_file_event(
            Event.Type.FILE_COPIED, copy, sourceFileId=source.id, sourceVersion=source.version
        )
        return copy


def file_download_url(
    *, tenant: Tenant, file_id: str, expires_in: int = 3600
) -> objectstore.PresignedDownload:
    """A presigned GET of the file's current version, its event and its bandwidth.

    Lock-free: the file row is read, not locked (a URL is a snapshot of the version read;
    a replace or delete meanwhile changes later URLs), so downloads of a popular file never
    queue behind each other or behind a change of the file.
    """
    file = read_file(tenant, file_id)
    if file.status != Status.UPLOADED:
        raise FileNotUploaded(
            f"The file is {file.status}; only an uploaded file can be downloaded."
        )
    with transaction.atomic():
        download = objectstore.presign_get(
            key=file.current_object.storage_key,
            expires_in=expires_in,
            filename=file.filename,
            content_type=file.content_type,
        )
        record_file_event(Event.Type.FILE_DOWNLOADED, file, expiresAt=iso(download.expires_at))
        bandwidth_record(tenant=tenant, size=file.size)  # last: the day's row lock
        return download
