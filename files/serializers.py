"""JSON in and out of the Files endpoints (files, folder operations, batches): the request
serializers (the one definition of what each accepts, documented from the same fields) and
the renderers, annotated with the shapes of files/shapes.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, cast

from rest_framework import serializers

from files import selectors
from files.models import File
from files.services import Outcome
from files.shapes import (
    BatchOp,
    BatchResultJson,
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
    FOLDER_PATTERN,
    clean_content_type,
    clean_expires_at,
    clean_filename,
    clean_metadata,
    clean_path,
    clean_size,
)
from storage_service import objectstore
from storage_service.errors import ApiError
from storage_service.serializers import (
    CleanedField,
    Schema,
    StrictSerializer,
    json_schema,
    strict_int,
    validated,
    with_schema,
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
    upload_token_id: str | None


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
        "uploadTokenId": file.upload_token_id,
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


# --- Folder operations ---------------------------------------------------------------------


def _folder_path_schema() -> Schema:
    schema = json_schema(clean_path)
    schema.update(type="string", minLength=1, pattern=FOLDER_PATTERN)
    schema["description"] = "A folder, not the root. " + schema.get("description", "")
    return schema


@with_schema(_folder_path_schema)
def clean_folder(value: Any) -> str:
    """A folder path that is not the root (``""``, ``"/"`` and null are the root)."""
    path = clean_path(value)
    if path is None:
        raise serializers.ValidationError("Must be a folder, not the root.")
    return path


class FolderMoveRequest(StrictSerializer):
    """`from` (not the root) and `to` (`""`, `"/"` or null: the root), which must not be
    `from` or a folder below it."""

    def get_fields(self) -> dict[str, serializers.Field]:
        # Declared here because "from" is a Python keyword.
        return {
            "from": CleanedField(clean_folder, help_text="The folder to move."),
            "to": CleanedField(
                clean_path,
                help_text="Where `from` goes: its files get the same place under `to`. "
                "Renaming a folder is a move (`a/old` to `a/new`).",
            ),
        }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        source, target = attrs["from"], attrs["to"]
        if target is not None and (target == source or target.startswith(source + "/")):
            raise serializers.ValidationError({"to": ["Must not be `from` or a folder below it."]})
        return super().validate(attrs)


class FolderRequest(StrictSerializer):
    path = CleanedField(clean_folder)


# --- Batch ---------------------------------------------------------------------------------

MAX_OPERATIONS = 100
MAX_ID_LENGTH = 100
# Each operation's fields beside "op" and "id", and the serializer of its single endpoint
# that validates them (delete and restore take none).
OPERATION_FIELDS: dict[str, type[StrictSerializer] | None] = {
    "update": UpdateRequest,
    "delete": None,
    "restore": None,
    "copy": CopyRequest,
}
_ID_SCHEMA: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_ID_LENGTH,
    "description": "The file's id, as in its single endpoint's path (an unknown id: that "
    "operation's answer is 404 `FILE_NOT_FOUND`).",
}


def _operation_schema(op: str) -> Schema:
    properties: Schema = {"op": {"type": "string", "enum": [op]}, "id": _ID_SCHEMA}
    fields = OPERATION_FIELDS[op]
    if fields is not None:
        for name, field in fields().fields.items():
            properties[name] = json_schema(cast(CleanedField, field).clean)
    schema: Schema = {
        "type": "object",
        "properties": properties,
        "required": ["op", "id"],
        "additionalProperties": False,
    }
    if op == "update":
        schema["minProperties"] = 3  # op, id and at least one change, as PATCH requires
    return schema


def _operations_schema() -> Schema:
    return {
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_OPERATIONS,
        "items": {"oneOf": [_operation_schema(op) for op in OPERATION_FIELDS]},
        "description": "Run in order, each as its single endpoint (`PATCH`, `DELETE`, "
        "`…/restore`, `…/copy`). An id may appear once.",
    }


@with_schema(_operations_schema)
def clean_operations(value: Any) -> list[dict[str, Any]]:
    """Every operation's shape and every field's value, checked before anything runs: one
    refusal (each bad operation by its index) and nothing done."""
    if not isinstance(value, list):
        raise serializers.ValidationError("Must be a list of operations.")
    if not 1 <= len(value) <= MAX_OPERATIONS:
        raise serializers.ValidationError(f"Send 1 to {MAX_OPERATIONS} operations.")
    cleaned: list[dict[str, Any]] = []
    errors: dict[str, Any] = {}
    first_of: dict[str, int] = {}
    for index, item in enumerate(value):
        try:
            operation = _clean_operation(item)
        except serializers.ValidationError as exc:
            errors[str(index)] = exc.detail
            continue
        seen = first_of.setdefault(operation["id"], index)
        if seen != index:
            errors[str(index)] = {"id": [f"Operation {seen} has the same id."]}
        cleaned.append(operation)
    if errors:
        raise serializers.ValidationError(errors)
    return cleaned


def _clean_operation(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise serializers.ValidationError({"body": ["Must be an object."]})
    op = item.get("op")
    if not isinstance(op, str) or op not in OPERATION_FIELDS:
        raise serializers.ValidationError(
            {"op": [f"Must be one of: {', '.join(OPERATION_FIELDS)}."]}
        )
    file_id = item.get("id")
    if not isinstance(file_id, str) or not 1 <= len(file_id) <= MAX_ID_LENGTH:
        raise serializers.ValidationError(
            {"id": [f"Must be a file id (a string of 1 to {MAX_ID_LENGTH} characters)."]}
        )
    fields = {key: value for key, value in item.items() if key not in ("op", "id")}
    request = OPERATION_FIELDS[op]
    if request is None:
        if fields:
            raise serializers.ValidationError({name: ["Unknown field."] for name in fields})
        return {"op": op, "id": file_id, "fields": {}}
    try:
        return {"op": op, "id": file_id, "fields": validated(request, fields)}
    except ApiError as exc:  # a lone non-object error of validated()
        raise serializers.ValidationError(exc.details or exc.message) from exc


class BatchRequest(StrictSerializer):
    operations = CleanedField(clean_operations)


def batch_result_json(outcome: Outcome, answer: tuple[int, Any]) -> BatchResultJson:
    status, body = answer
    return {"op": cast(BatchOp, outcome.op), "id": outcome.id, "status": status, "body": body}


def file_answer(outcome: Outcome) -> tuple[int, Any]:
    """A successful operation's status and body: its single endpoint's."""
    assert outcome.file is not None
    if outcome.op == "delete":
        return 200, {"data": deleted_json(outcome.file)}
    return (201 if outcome.op == "copy" else 200), file_json(outcome.file)
