"""JSON in and out of the Files endpoints: the request serializers (the one definition of
what each accepts, documented from the same fields) and the renderers, annotated with the
shapes of files/shapes.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, cast

from files import selectors
from files.models import File
from files.shapes import (
    DownloadUrlJson,
    FileCompletedJson,
    FileDeletedJson,
    FileJson,
    FileStatus,
    FileWithUploadJson,
    FolderJson,
    UploadDescriptorJson,
)
from files.validation import (
    clean_content_type,
    clean_expires_at,
    clean_filename,
    clean_metadata,
    clean_path,
    clean_size,
)
from storage_service import objectstore
from storage_service.serializers import (
    CleanedField,
    StrictSerializer,
    strict_int,
)
from storage_service.timefmt import iso_required, shown, shown_required

# --- Input ---------------------------------------------------------------------------------


class UploadRequest(StrictSerializer):
    filename = CleanedField(clean_filename)
    contentType = CleanedField(clean_content_type)
    size = CleanedField(clean_size)
    path = CleanedField(clean_path, required=False)
    metadata = CleanedField(clean_metadata, required=False)
    expiresAt = CleanedField(clean_expires_at, required=False, source="expires_at")


def upload_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """A validated UploadRequest as services.file_upload_start's arguments."""
    return {
        "filename": body["filename"],
        "content_type": body["contentType"],
        "size": body["size"],
        "path": body.get("path"),
        "metadata": body.get("metadata"),
        "expires_at": body.get("expires_at"),
    }


class UpdateRequest(StrictSerializer):
    """At least one of the fields; ``metadata`` replaces the stored metadata whole;
    ``expiresAt`` null clears the expiry."""

    min_fields = 1

    filename = CleanedField(clean_filename, required=False)
    path = CleanedField(clean_path, required=False)
    metadata = CleanedField(clean_metadata, required=False)
    expiresAt = CleanedField(clean_expires_at, required=False, source="expires_at")


class CopyRequest(StrictSerializer):
    """The copy's name and folder; each defaults to the source's."""

    filename = CleanedField(clean_filename, required=False)
    path = CleanedField(clean_path, required=False)


EXPIRES_IN_DEFAULT = 3600


class DownloadUrlRequest(StrictSerializer):
    expiresInSeconds = CleanedField(
        strict_int(60, 86400), required=False, default=EXPIRES_IN_DEFAULT
    )


class ReplaceRequest(StrictSerializer):
    contentType = CleanedField(clean_content_type)
    size = CleanedField(clean_size)


# --- Output --------------------------------------------------------------------------------


class FileRow(Protocol):
    """What file_json reads: a File (a list page reads selectors.FileText rows of the same
    fields instead of building model instances)."""

    id: str
    filename: str
    path: str | None
    content_type: str
    size: int
    status: str
    version: int
    metadata: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    uploaded_at: datetime | None
    checksum: str | None
    deleted_at: datetime | None
    placeholder: str | None


def file_json(file: FileRow | selectors.FileText) -> FileJson:
    """The contract's file object. Optional timestamps appear only once they apply."""
    body: FileJson = {
        "id": file.id,
        "filename": file.filename,
        "path": file.path,
        "contentType": file.content_type,
        "size": file.size,
        "status": cast(FileStatus, file.status),
        "version": file.version,
        "metadata": file.metadata,
        "createdAt": shown_required(file.created_at),
        "updatedAt": shown_required(file.updated_at),
        "expiresAt": shown(file.expires_at),
        "placeholder": file.placeholder,
    }
    if file.uploaded_at is not None:
        body["uploadedAt"] = shown_required(file.uploaded_at)
    if file.checksum:
        body["checksum"] = file.checksum
    if file.status == File.Status.DELETED and file.deleted_at is not None:
        body["deletedAt"] = shown_required(file.deleted_at)
    return body


def upload_json(upload: objectstore.PresignedUpload) -> UploadDescriptorJson:
    assert upload.method == "PUT"  # the store's presigned uploads are PUTs
    return {
        "url": upload.url,
        "method": "PUT",
        "headers": upload.headers,
        "expiresAt": iso_required(upload.expires_at),
    }


def file_with_upload_json(file: File, upload: objectstore.PresignedUpload) -> FileWithUploadJson:
    return {"file": file_json(file), "upload": upload_json(upload)}


def completed_json(file: File) -> FileCompletedJson:
    assert file.uploaded_at is not None and file.checksum
    return {
        "id": file.id,
        "status": "uploaded",
        "uploadedAt": iso_required(file.uploaded_at),
        "checksum": file.checksum,
        "version": file.version,
    }


def deleted_json(file: File) -> FileDeletedJson:
    return {"id": file.id, "deleted": True}


def download_url_json(download: objectstore.PresignedDownload) -> DownloadUrlJson:
    return {"url": download.url, "expiresAt": iso_required(download.expires_at)}


def folder_json(row: selectors.FolderRow, *, parent: str | None) -> FolderJson:
    name = row["name"]
    return {
        "path": name if parent is None else f"{parent}/{name}",
        "name": name,
        "parent": parent,
        "fileCount": row["file_count"],
    }
