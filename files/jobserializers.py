"""JSON in and out of jobs, folder operations and batches: the request serializers (the one
definition of what each accepts, documented from the same fields) and the renderers."""

from __future__ import annotations

from typing import Any, cast

from rest_framework import serializers

from files.serializers import CopyRequest, UpdateRequest, deleted_json, file_json
from files.services import Outcome
from files.shapes import BatchOp, BatchResultJson
from files.validation import FOLDER_PATTERN, clean_path
from storage_service.errors import ApiError
from storage_service.serializers import (
    CleanedField,
    Schema,
    StrictSerializer,
    json_schema,
    validated,
    with_schema,
)

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
