"""Multipart request validation and the session's JSON shape."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rest_framework import serializers

from files.validation import (
    clean_content_type,
    clean_filename,
    clean_metadata,
    clean_path,
    clean_size,
)
from storage_service.serializers import CleanedField, StrictSerializer
from storage_service.timefmt import iso
from uploads.models import UploadSession
from uploads.services import PresignedParts
from uploads.sizing import MAX_PARTS

# --- Input ---------------------------------------------------------------------------------


def clean_multipart_size(value: Any) -> int:
    size = clean_size(value)
    if size < 1:
        raise serializers.ValidationError(
            "Must be at least 1; upload an empty file with POST /v1/files/upload."
        )
    return size


def _part_number(value: Any) -> int:
    # JSON integers only, as every other integer of the API.
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PARTS:
        raise serializers.ValidationError(f"Part numbers are integers from 1 to {MAX_PARTS}.")
    return value


def _duplicates(numbers: list[int]) -> list[int]:
    return sorted(n for n, count in Counter(numbers).items() if count > 1)


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


def _etag(value: Any) -> str:
    # Accepted with or without the quotes the store puts around it in the ETag header.
    if not isinstance(value, str) or not 1 <= len(value.strip().strip('"')) <= 1024:
        raise serializers.ValidationError("Each etag is the ETag header the part's PUT returned.")
    return value.strip().strip('"')


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


class SignPartsRequest(StrictSerializer):
    partNumbers = CleanedField(clean_part_numbers)


class CompleteRequest(StrictSerializer):
    parts = CleanedField(clean_completed_parts)


# --- Output --------------------------------------------------------------------------------


def parts_json(parts: PresignedParts) -> list[dict[str, Any]]:
    expires = iso(parts.expires_at)  # formatted once for up to 10,000 parts
    return [{"partNumber": n, "url": url, "expiresAt": expires} for n, url in parts.urls]


def session_json(session: UploadSession, parts: PresignedParts) -> dict[str, Any]:
    """The contract's session (id, partSize, parts, expiresAt) and what a client also needs."""
    return {
        "id": session.id,
        "fileId": session.file_id,
        "status": session.status,
        "size": session.size,
        "partSize": session.part_size,
        "partCount": session.part_count,
        "parts": parts_json(parts),
        "expiresAt": iso(session.expires_at),
        "createdAt": iso(session.created_at),
    }
