"""Field rules for filenames, folder paths, metadata and content types (all documented limits)."""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from rest_framework import serializers

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# RFC 6838 type/subtype tokens, optionally with parameters (";charset=utf-8").
_MIME = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
    r"(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=(\"[^\"]*\"|[A-Za-z0-9!#$&^_.+-]+))*$"
)


def clean_filename(value: Any) -> str:
    if not isinstance(value, str):
        raise serializers.ValidationError("Must be a string.")
    if not value or value.strip() == "":
        raise serializers.ValidationError("Must not be empty.")
    if len(value) > settings.SERVICE_MAX_FILENAME_LENGTH:
        raise serializers.ValidationError(
            f"At most {settings.SERVICE_MAX_FILENAME_LENGTH} characters."
        )
    if "/" in value or "\\" in value:
        raise serializers.ValidationError("Must not contain '/' or '\\'; use path for folders.")
    if _CONTROL.search(value):
        raise serializers.ValidationError("Must not contain control characters.")
    if value in {".", ".."}:
        raise serializers.ValidationError("Must not be '.' or '..'.")
    return value


def clean_path(value: Any) -> str | None:
    """A logical folder path; ``None``, ``""`` and ``"/"`` all mean the root (stored as null)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise serializers.ValidationError("Must be a string or null.")
    if value in {"", "/"}:
        return None
    if len(value) > settings.SERVICE_MAX_PATH_LENGTH:
        raise serializers.ValidationError(f"At most {settings.SERVICE_MAX_PATH_LENGTH} characters.")
    if value.startswith("/") or value.endswith("/"):
        raise serializers.ValidationError("Must not start or end with '/'.")
    if _CONTROL.search(value) or "\\" in value:
        raise serializers.ValidationError("Must not contain control characters or '\\'.")
    for segment in value.split("/"):
        if segment in {"", ".", ".."}:
            raise serializers.ValidationError("Segments must not be empty, '.' or '..'.")
        if segment.strip() != segment:
            raise serializers.ValidationError("Segments must not start or end with spaces.")
    return value


def clean_metadata(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise serializers.ValidationError("Must be a JSON object or null.")
    if len(value) > settings.SERVICE_MAX_METADATA_KEYS:
        raise serializers.ValidationError(f"At most {settings.SERVICE_MAX_METADATA_KEYS} keys.")
    for key in value:
        if not key or len(key) > 128:
            raise serializers.ValidationError("Keys must be 1 to 128 characters.")
    encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    if len(encoded) > settings.SERVICE_MAX_METADATA_BYTES:
        raise serializers.ValidationError(
            f"At most {settings.SERVICE_MAX_METADATA_BYTES} bytes when serialized."
        )
    return value


def clean_content_type(value: Any) -> str:
    if not isinstance(value, str) or not _MIME.match(value.strip()):
        raise serializers.ValidationError("Must be a MIME type such as 'image/png'.")
    return value.strip()


def clean_size(value: Any) -> int:
    # JSON integers only: "12", 12.0 and true are refused rather than coerced.
    if isinstance(value, bool) or not isinstance(value, int):
        raise serializers.ValidationError("Must be an integer.")
    if value < 0:
        raise serializers.ValidationError("Must be at least 0.")
    return value


def clean_search(value: Any) -> str:
    if not isinstance(value, str) or "\x00" in value:
        raise serializers.ValidationError("Must be text without NUL characters.")
    return value
