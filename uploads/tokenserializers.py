"""Upload-token request validation and the token's JSON shape."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from accounts.limits import ALLOWED_TYPE_PATTERN, MAX_ALLOWED_TYPES, clean_allowed_types
from files.validation import clean_metadata, clean_path
from storage_service.serializers import (
    CleanedField,
    Schema,
    StrictSerializer,
    json_integer,
    strict_int,
    with_schema,
)
from storage_service.timefmt import iso, iso_required
from uploads.models import UploadToken
from uploads.tokenshapes import UploadTokenJson

MAX_FILES = 10000
MAX_FILES_DEFAULT = 1
EXPIRES_IN_MIN, EXPIRES_IN_MAX, EXPIRES_IN_DEFAULT = 60, 86400, 900
MAX_ORIGINS = 20
MAX_ORIGIN_LENGTH = 2048
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _max_size_schema() -> Schema:
    limit = settings.SERVICE_MAX_MULTIPART_UPLOAD_BYTES
    return {
        "type": ["integer", "null"],
        "minimum": 1,
        "maximum": limit,
        "description": "The largest declared size of one file, in bytes (413 "
        "`FILE_TOO_LARGE` above it). null: the service's own limits.",
    }


@with_schema(_max_size_schema)
def clean_max_file_size(raw: Any) -> int | None:
    if raw is None:
        return None
    value = json_integer(raw)
    limit = settings.SERVICE_MAX_MULTIPART_UPLOAD_BYTES
    if value is None or not 1 <= value <= limit:
        raise serializers.ValidationError(f"Must be an integer from 1 to {limit}.")
    return value


@with_schema(
    lambda: {
        "type": ["array", "null"],
        "items": {"type": "string", "pattern": ALLOWED_TYPE_PATTERN, "example": "image/*"},
        "minItems": 1,
        "maxItems": MAX_ALLOWED_TYPES,
        "description": "MIME types, exact (`application/pdf`) or a whole type (`image/*`), "
        "checked against the declared type at start and the real type of the bytes at "
        "complete (422 `CONTENT_TYPE_NOT_ALLOWED`). null: any type.",
    }
)
def clean_token_types(raw: Any) -> list[str] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(value, str) for value in raw):
        raise serializers.ValidationError("Must be a list of strings or null.")
    for value in raw:
        if not re.fullmatch(ALLOWED_TYPE_PATTERN, value):
            raise serializers.ValidationError(
                f"{value!r} is not a MIME type such as 'image/png' or 'image/*'."
            )
    try:
        return clean_allowed_types(raw)
    except DjangoValidationError as exc:
        raise serializers.ValidationError(exc.messages) from exc


def clean_origin(raw: str) -> str:
    """``scheme://host[:port]`` as a browser sends it in ``Origin``: lowercase, the default
    port dropped, nothing after the host."""
    if len(raw) > MAX_ORIGIN_LENGTH:
        raise serializers.ValidationError(f"An origin is at most {MAX_ORIGIN_LENGTH} characters.")
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise serializers.ValidationError(f"{raw!r} is not an origin.") from exc
    if (
        parts.scheme not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.username is not None
        or parts.password is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or raw.endswith("?")
        or raw.endswith("#")
    ):
        raise serializers.ValidationError(
            f"{raw!r} is not an origin such as 'https://app.example' or 'http://localhost:3000'."
        )
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal
    if port is None or port == _DEFAULT_PORTS[parts.scheme]:
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}://{host}:{port}"


@with_schema(
    lambda: {
        "type": ["array", "null"],
        "items": {"type": "string", "maxLength": MAX_ORIGIN_LENGTH, "format": "uri"},
        "minItems": 1,
        "maxItems": MAX_ORIGINS,
        "description": "The pages' origins (`https://app.example`): a request with any other "
        "`Origin`, or none, answers 403 `ORIGIN_NOT_ALLOWED`. null: any origin.",
        "example": ["https://app.example"],
    }
)
def clean_origins(raw: Any) -> list[str] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(value, str) for value in raw):
        raise serializers.ValidationError("Must be a list of strings or null.")
    if not 1 <= len(raw) <= MAX_ORIGINS:
        raise serializers.ValidationError(f"Give 1 to {MAX_ORIGINS} origins, or null.")
    cleaned: list[str] = []
    for value in raw:
        origin = clean_origin(value)
        if origin not in cleaned:
            cleaned.append(origin)
    return cleaned


class UploadTokenCreateRequest(StrictSerializer):
    """Every field optional: ``{}`` mints a token for one file of any type, anywhere, for
    15 minutes."""

    path = CleanedField(clean_path, required=False)
    maxFileSizeBytes = CleanedField(clean_max_file_size, required=False)
    allowedContentTypes = CleanedField(clean_token_types, required=False)
    maxFiles = CleanedField(strict_int(1, MAX_FILES), required=False, default=MAX_FILES_DEFAULT)
    expiresInSeconds = CleanedField(
        strict_int(EXPIRES_IN_MIN, EXPIRES_IN_MAX), required=False, default=EXPIRES_IN_DEFAULT
    )
    metadata = CleanedField(clean_metadata, required=False)
    allowedOrigins = CleanedField(clean_origins, required=False)


def create_arguments(body: dict[str, Any]) -> dict[str, Any]:
    """A validated UploadTokenCreateRequest as tokens.upload_token_create's arguments."""
    return {
        "path": body.get("path"),
        "max_file_size_bytes": body.get("maxFileSizeBytes"),
        "allowed_content_types": body.get("allowedContentTypes"),
        "max_files": body["maxFiles"],
        "expires_in_seconds": body["expiresInSeconds"],
        "metadata": body.get("metadata"),
        "allowed_origins": body.get("allowedOrigins"),
    }


def upload_token_json(token: UploadToken) -> UploadTokenJson:
    return {
        "id": token.id,
        "path": token.path,
        "maxFileSizeBytes": token.max_file_size_bytes,
        "allowedContentTypes": token.allowed_content_types,
        "maxFiles": token.max_files,
        "filesStarted": token.files_started,
        "allowedOrigins": token.allowed_origins,
        "metadata": token.metadata,
        "expiresAt": iso_required(token.expires_at),
        "revokedAt": iso(token.revoked_at),
        "createdAt": iso_required(token.created_at),
    }
