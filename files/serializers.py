from __future__ import annotations

from typing import Any

from rest_framework import serializers

from files.models import File
from files.validation import (
    clean_content_type,
    clean_filename,
    clean_metadata,
    clean_path,
    clean_size,
)
from storage_service.serializers import CleanedField, StrictSerializer, strict_int
from storage_service.timefmt import iso

# --- Input ---------------------------------------------------------------------------------


class UploadRequest(StrictSerializer):
    filename = CleanedField(clean_filename)
    contentType = CleanedField(clean_content_type)
    size = CleanedField(clean_size)
    path = CleanedField(clean_path, required=False)
    metadata = CleanedField(clean_metadata, required=False)


class UpdateRequest(StrictSerializer):
    filename = CleanedField(clean_filename, required=False)
    path = CleanedField(clean_path, required=False)
    metadata = CleanedField(clean_metadata, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                {"body": ["Send at least one of filename, path, metadata."]}
            )
        return attrs


class CopyRequest(StrictSerializer):
    filename = CleanedField(clean_filename, required=False)
    path = CleanedField(clean_path, required=False)


class DownloadUrlRequest(StrictSerializer):
    expiresInSeconds = CleanedField(strict_int(60, 86400), required=False)


class ReplaceRequest(StrictSerializer):
    contentType = CleanedField(clean_content_type)
    size = CleanedField(clean_size)


class EmptyRequest(StrictSerializer):
    pass


# --- Output --------------------------------------------------------------------------------


def file_json(file: File) -> dict[str, Any]:
    """The contract's file object. Optional timestamps appear only once they apply."""
    body: dict[str, Any] = {
        "id": file.id,
        "filename": file.filename,
        "path": file.path,
        "contentType": file.content_type,
        "size": file.size,
        "status": file.status,
        "version": file.version,
        "metadata": file.metadata,
        "createdAt": iso(file.created_at),
        "updatedAt": iso(file.updated_at),
    }
    if file.uploaded_at is not None:
        body["uploadedAt"] = iso(file.uploaded_at)
    if file.checksum:
        body["checksum"] = file.checksum
    if file.status == File.Status.DELETED and file.deleted_at is not None:
        body["deletedAt"] = iso(file.deleted_at)
    return body
