"""Multipart request validation and the session's JSON shape."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, cast

from rest_framework import serializers

from files.serializers import file_json
from files.validation import (
    clean_content_type,
    clean_expires_at,
    clean_filename,
    clean_metadata,
    clean_path,
    size_rule,
)
from storage_service import objectstore
from storage_service.serializers import (
    CleanedField,
    Schema,
    StrictSerializer,
    json_integer,
    with_schema,
)
from storage_service.timefmt import iso_required
from uploads.models import UploadSession
from uploads.services import PresignedParts, StartedMultipart
from uploads.shapes import (
    HeldPartsJson,
    MultipartSessionJson,
    MultipartStartedJson,
    PresignedPartJson,
    SessionStatus,
)
from uploads.sizing import MAX_PARTS

# --- Input ---------------------------------------------------------------------------------

clean_multipart_size = size_rule(
    "SERVICE_MAX_MULTIPART_UPLOAD_BYTES",
    minimum=1,
    hint=" Upload an empty file with POST /v1/files/upload.",
)


def _part_number(raw: Any) -> int:
    # JSON integers only, as every other integer of the API.
    value = json_integer(raw)
    if value is None or not 1 <= value <= MAX_PARTS:
        raise serializers.ValidationError(f"Part numbers are integers from 1 to {MAX_PARTS}.")
    return value


PART_NUMBER: Schema = {"type": "integer", "minimum": 1, "maximum": MAX_PARTS}


def _duplicates(numbers: list[int]) -> list[int]:
    return sorted(n for n, count in Counter(numbers).items() if count > 1)


@with_schema(
    lambda: {
        "type": "array",
        "items": PART_NUMBER,
        "minItems": 1,
        "maxItems": MAX_PARTS,
        "uniqueItems": True,
    }
)
def clean_part_numbers(value: Any) -> list[int]:
    if not isinstance(value, list) or not value:
        raise serializers.ValidationError("Must be a non-empty array of part numbers.")
    if len(value) > MAX_PARTS:
        raise serializers.ValidationError(f"At most {MAX_PARTS} part numbers.")
    numbers = [_part_number(item) for item in value]
    repeated = _duplicates(numbers)
    if repeated:
        raise serializers.ValidationError(f"Part numbers given twice: {repeated[:20]}.")
    return numbers


# An entity tag as RFC 9110 writes it (etagc: "!" and "#" to "~"), with or without the quotes
# the store puts around it in the ETag header.
ETAG_PATTERN = '^"?[!#-~]{1,1024}"?$'
_ETAG = re.compile(ETAG_PATTERN)


def _etag(value: Any) -> str:
    if not isinstance(value, str) or not _ETAG.fullmatch(value):
        raise serializers.ValidationError("Each etag is the ETag header the part's PUT returned.")
    return value.strip('"')


@with_schema(
    lambda: {
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_PARTS,
        "description": "Every part, 1 to partCount, each once (a part number given twice is "
        "a 400), with the etag its PUT answered.",
        "items": {
            "type": "object",
            "properties": {
                "partNumber": PART_NUMBER,
                "etag": {
                    "type": "string",
                    "pattern": ETAG_PATTERN,
                    "example": '"9b2cf535f27731c974343645a3985328"',
                },
            },
            "required": ["partNumber", "etag"],
            "additionalProperties": False,
        },
    }
)
def clean_completed_parts(value: Any) -> list[tuple[int, str]]:
    """``[{partNumber, etag}, ...]`` as (number, etag) pairs. A plain loop, not a nested
    serializer per item: a body may list 10,000 parts."""
    if not isinstance(value, list) or not value:
        raise serializers.ValidationError("Must be a non-empty array of {partNumber, etag}.")
    if len(value) > MAX_PARTS:
        raise serializers.ValidationError(f"At most {MAX_PARTS} parts.")
    parts: list[tuple[int, str]] = []
    for item in value:
        if not isinstance(item, dict) or set(item) != {"partNumber", "etag"}:
            raise serializers.ValidationError(
                "Each part is an object with exactly partNumber and etag."
            )
        parts.append((_part_number(item["partNumber"]), _etag(item["etag"])))
    repeated = _duplicates([n for n, _ in parts])
    if repeated:
        raise serializers.ValidationError(f"Part numbers given twice: {repeated[:20]}.")
    return parts


class MultipartStartRequest(StrictSerializer):
    filename = CleanedField(clean_filename)
    contentType = CleanedField(clean_content_type)
    size = CleanedField(clean_multipart_size)
    path = CleanedField(clean_path, required=False)
    metadata = CleanedField(clean_metadata, required=False)
    expiresAt = CleanedField(clean_expires_at, required=False, source="expires_at")


class SignPartsRequest(StrictSerializer):
    partNumbers = CleanedField(clean_part_numbers)


class CompleteRequest(StrictSerializer):
    parts = CleanedField(clean_completed_parts)


# --- Output --------------------------------------------------------------------------------


def parts_json(parts: PresignedParts) -> list[PresignedPartJson]:
    expires = iso_required(parts.expires_at)  # formatted once for up to 10,000 parts
    return [{"partNumber": n, "url": url, "expiresAt": expires} for n, url in parts.urls]


def session_json(session: UploadSession, parts: PresignedParts) -> MultipartSessionJson:
    """The contract's session (id, partSize, parts, expiresAt) and what a client also needs."""
    return {
        "id": session.id,
        "fileId": session.file_id,
        "status": cast(SessionStatus, session.status),
        "size": session.size,
        "partSize": session.part_size,
        "partCount": session.part_count,
        "parts": parts_json(parts),
        "expiresAt": iso_required(session.expires_at),
        "createdAt": iso_required(session.created_at),
    }


def started_json(started: StartedMultipart) -> MultipartStartedJson:
    return {"file": file_json(started.file), "upload": session_json(started.session, started.parts)}


def held_parts_json(held: list[objectstore.HeldPart]) -> HeldPartsJson:
    return {
        "parts": [
            {"partNumber": part.number, "etag": part.etag, "size": part.size} for part in held
        ]
    }
