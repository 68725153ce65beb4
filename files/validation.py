"""Field rules for filenames, folder paths, metadata and content types (all documented limits).

Each rule is a regular expression plus the limits that are settings, and each clean function
enforces exactly that: the same pattern is the function's JSON Schema in the OpenAPI document
(``with_schema``), so what the document allows is what the service accepts, character for
character. The patterns use only what Python's ``re`` and ECMA-262 read alike (no ``\\s``,
no ``.``, no lookaround): explicit classes, alternation and repetition.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from storage_service.parsers import depth
from storage_service.serializers import Schema, json_integer, with_schema

# C0 controls and DEL, refused in names and paths.
_CONTROL = r"\x00-\x1f\x7f"
# Invisible and direction-changing characters, refused in names and paths too: a filename
# "invoice\u202egpj.exe" is shown as "invoiceexe.jpg", and a zero-width character makes two
# names that look the same differ. The bidi embeddings, overrides and isolates (U+202A-U+202E,
# U+2066-U+2069) and marks (U+200E, U+200F, U+061C); zero-width space, non-joiner and joiner
# (U+200B-U+200D); word joiner and invisible operators (U+2060-U+2064); the BOM (U+FEFF) and
# the Mongolian vowel separator (U+180E), which render as nothing.
_INVISIBLE = r"\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
# Whitespace that is not a control character: the rest of what str.isspace() calls space.
_SPACE = r" \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Every character str.isspace() is true for (what str.strip() removes).
_ANY_SPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f" + _SPACE + "]"

# A name character (no '/', '\\', control or invisible), and the same without whitespace or
# without '.'.
_NAME = rf"[^/\\{_CONTROL}{_INVISIBLE}]"
_NAME_SOLID = rf"[^/\\{_CONTROL}{_INVISIBLE}{_SPACE}]"
_NAME_SOLID_NOT_DOT = rf"[^/\\{_CONTROL}{_INVISIBLE}{_SPACE}.]"
_NAME_NOT_DOT = rf"[^/\\{_CONTROL}{_INVISIBLE}.]"
_LEADING_SPACE = rf"[{_SPACE}]"

# A filename: at least one character that is not whitespace, and not "." or "..".
FILENAME_PATTERN = (
    rf"^(?:{_LEADING_SPACE}*{_NAME_SOLID_NOT_DOT}{_NAME}*"  # starts (after spaces) with no dot
    rf"|{_LEADING_SPACE}+\.{_NAME}*"  # spaces, then a dot: never "." or ".."
    rf"|\.(?:{_NAME_NOT_DOT}{_NAME}*|\.{_NAME}+))$"  # a dot, then more than "" or "."
)

# A path segment: no leading or trailing whitespace, not "." or "..". Each string matches it in
# one way only (the alternatives start differently): a segment that matched in two ways made a
# path of n such segments that fails at its end cost 2**n tries.
_SEGMENT = (
    rf"(?:{_NAME_SOLID_NOT_DOT}(?:{_NAME}*{_NAME_SOLID})?"  # no leading dot
    rf"|\.(?:{_NAME_SOLID_NOT_DOT}(?:{_NAME}*{_NAME_SOLID})?"  # ".x", ".x y"
    rf"|{_LEADING_SPACE}{_NAME}*{_NAME_SOLID}"  # ". x"
    rf"|\.{_NAME}*{_NAME_SOLID}))"  # "...", "..x", never ".."
)
# Segments joined by '/', or the root ("" or "/").
PATH_PATTERN = rf"^(?:/?|{_SEGMENT}(?:/{_SEGMENT})*)$"
# A folder that is not the root (a folder operation's path).
FOLDER_PATTERN = rf"^{_SEGMENT}(?:/{_SEGMENT})*$"

# RFC 6838 type/subtype tokens, optionally with parameters (";charset=utf-8"), as an HTTP
# header value (RFC 9110: spaces or tabs around ';', a quoted value of printable ASCII): the
# content type is sent to the store and signed into the upload URL. Surrounding whitespace is
# dropped.
_TOKEN = r"[A-Za-z0-9!#$&^_.+-]"
_OWS = r"[ \t]*"
_QUOTED = r'"(?:[\t !#-\[\]-~]|\\[\t !-~])*"'
_MIME = (
    rf"[A-Za-z0-9]{_TOKEN}{{0,126}}/[A-Za-z0-9]{_TOKEN}{{0,126}}"
    rf"(?:{_OWS};{_OWS}{_TOKEN}+=(?:{_QUOTED}|{_TOKEN}+))*"
)
CONTENT_TYPE_PATTERN = rf"^{_ANY_SPACE}*{_MIME}{_ANY_SPACE}*$"
MAX_CONTENT_TYPE_LENGTH = 255  # files_file.content_type is a varchar(255)
MAX_METADATA_KEY_LENGTH = 128
# Bytes of UTF-8, beside the character limits (settings): a filename and a path land in
# B-tree indexes (file_list_filename, file_path_prefix), whose entries may not
# exceed 2704 bytes. 1,024 four-byte characters are 4,096 bytes, so a character limit alone
# let a path through validation that the index then refused (a database error, not a 400).
# These leave room for the other columns of each index entry (ids, timestamps: < 100 bytes).
MAX_FILENAME_BYTES = 1024
MAX_PATH_BYTES = 2048

_FILENAME = re.compile(FILENAME_PATTERN)
_PATH = re.compile(PATH_PATTERN)
_CONTENT_TYPE = re.compile(CONTENT_TYPE_PATTERN)


def _utf8_length(value: str) -> int:
    # "surrogatepass": a lone surrogate is refused by the parser; here it must not raise.
    return len(value.encode("utf-8", "surrogatepass"))


def _filename_schema() -> Schema:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": settings.SERVICE_MAX_FILENAME_LENGTH,
        "pattern": FILENAME_PATTERN,
        "description": "A name, not a path: no '/', '\\', control characters or invisible "
        "and text-direction characters (U+061C, U+180E, U+200B-U+200F, U+202A-U+202E, "
        "U+2060-U+2064, U+2066-U+2069, U+FEFF), not only whitespace, not '.' or '..'. At most "
        f"{settings.SERVICE_MAX_FILENAME_LENGTH} characters (`SERVICE_MAX_FILENAME_LENGTH`) "
        f"and at most {MAX_FILENAME_BYTES} bytes as UTF-8.",
        "x-maxBytes": MAX_FILENAME_BYTES,
        "example": "report.pdf",
    }


@with_schema(_filename_schema)
def clean_filename(value: Any) -> str:
    if not isinstance(value, str):
        raise serializers.ValidationError("Must be a string.")
    if not value or value.strip() == "":
        raise serializers.ValidationError("Must not be empty.")
    if len(value) > settings.SERVICE_MAX_FILENAME_LENGTH:
        raise serializers.ValidationError(
            f"At most {settings.SERVICE_MAX_FILENAME_LENGTH} characters."
        )
    if _utf8_length(value) > MAX_FILENAME_BYTES:
        raise serializers.ValidationError(f"At most {MAX_FILENAME_BYTES} bytes as UTF-8.")
    if "/" in value or "\\" in value:
        raise serializers.ValidationError("Must not contain '/' or '\\'; use path for folders.")
    if re.search(f"[{_CONTROL}]", value):
        raise serializers.ValidationError("Must not contain control characters.")
    if re.search(f"[{_INVISIBLE}]", value):
        raise serializers.ValidationError(
            "Must not contain invisible or text-direction characters (such as U+202E)."
        )
    if not _FILENAME.fullmatch(value):
        raise serializers.ValidationError("Must not be '.' or '..'.")
    return value


def _path_schema() -> Schema:
    return {
        "type": ["string", "null"],
        "maxLength": settings.SERVICE_MAX_PATH_LENGTH,
        "pattern": PATH_PATTERN,
        "description": "A folder: segments joined by '/' (no leading or trailing '/'; no "
        "empty, '.' or '..' segment; no segment starting or ending with whitespace; no '\\', "
        "control, invisible or text-direction characters, as in filenames). null, '' and '/' "
        f"mean the root. At most {settings.SERVICE_MAX_PATH_LENGTH} characters "
        f"(`SERVICE_MAX_PATH_LENGTH`) and at most {MAX_PATH_BYTES} bytes as UTF-8.",
        "x-maxBytes": MAX_PATH_BYTES,
        "example": "invoices/2026",
    }


@with_schema(_path_schema)
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
    if _utf8_length(value) > MAX_PATH_BYTES:
        raise serializers.ValidationError(f"At most {MAX_PATH_BYTES} bytes as UTF-8.")
    if value.startswith("/") or value.endswith("/"):
        raise serializers.ValidationError("Must not start or end with '/'.")
    if re.search(f"[{_CONTROL}\\\\]", value):
        raise serializers.ValidationError("Must not contain control characters or '\\'.")
    if re.search(f"[{_INVISIBLE}]", value):
        raise serializers.ValidationError(
            "Must not contain invisible or text-direction characters (such as U+202E)."
        )
    if not _PATH.fullmatch(value):
        raise serializers.ValidationError(
            "Segments must not be empty, '.' or '..', nor start or end with spaces."
        )
    return value


def _metadata_schema() -> Schema:
    return {
        "type": ["object", "null"],
        "maxProperties": settings.SERVICE_MAX_METADATA_KEYS,
        "propertyNames": {"minLength": 1, "maxLength": MAX_METADATA_KEY_LENGTH},
        "additionalProperties": True,
        "description": "Your own JSON, replaced whole on update: at most "
        f"{settings.SERVICE_MAX_METADATA_KEYS} keys (`SERVICE_MAX_METADATA_KEYS`) of 1 to "
        f"{MAX_METADATA_KEY_LENGTH} characters, at most {settings.SERVICE_MAX_METADATA_BYTES} "
        "bytes as compact UTF-8 JSON (`SERVICE_MAX_METADATA_BYTES`), and objects and arrays "
        f"nested at most {settings.SERVICE_MAX_METADATA_DEPTH} deep, the metadata object "
        "itself being depth 1 (`SERVICE_MAX_METADATA_DEPTH`). null clears it.",
        "x-maxSerializedBytes": settings.SERVICE_MAX_METADATA_BYTES,
        "x-maxDepth": settings.SERVICE_MAX_METADATA_DEPTH,
    }


@with_schema(_metadata_schema)
def clean_metadata(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise serializers.ValidationError("Must be a JSON object or null.")
    if len(value) > settings.SERVICE_MAX_METADATA_KEYS:
        raise serializers.ValidationError(f"At most {settings.SERVICE_MAX_METADATA_KEYS} keys.")
    for key in value:
        if not key or len(key) > MAX_METADATA_KEY_LENGTH:
            raise serializers.ValidationError(
                f"Keys must be 1 to {MAX_METADATA_KEY_LENGTH} characters."
            )
    if depth(value) > settings.SERVICE_MAX_METADATA_DEPTH:
        raise serializers.ValidationError(
            f"Objects and arrays nested at most {settings.SERVICE_MAX_METADATA_DEPTH} deep."
        )
    encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    if len(encoded) > settings.SERVICE_MAX_METADATA_BYTES:
        raise serializers.ValidationError(
            f"At most {settings.SERVICE_MAX_METADATA_BYTES} bytes when serialized."
        )
    return value


def _content_type_schema() -> Schema:
    return {
        "type": "string",
        "maxLength": MAX_CONTENT_TYPE_LENGTH,
        "pattern": CONTENT_TYPE_PATTERN,
        "description": "A MIME type (`type/subtype`, optionally `; name=value` parameters); "
        "surrounding whitespace is dropped.",
        "example": "application/pdf",
    }


@with_schema(_content_type_schema)
def clean_content_type(value: Any) -> str:
    if (
        not isinstance(value, str)
        or len(value) > MAX_CONTENT_TYPE_LENGTH
        or not _CONTENT_TYPE.fullmatch(value)
    ):
        raise serializers.ValidationError(
            f"Must be a MIME type such as 'image/png' (at most {MAX_CONTENT_TYPE_LENGTH} "
            "characters)."
        )
    return value.strip()


def size_rule(setting: str, *, minimum: int = 0, hint: str = "") -> Any:
    """A size in bytes, ``minimum`` up to the setting's limit. Above the limit the service
    answers 413 ``FILE_TOO_LARGE`` (the contract's status), so the limit is checked there and
    stated here, from the same setting."""

    def schema() -> Schema:
        limit = getattr(settings, setting)
        return {
            "type": "integer",
            "minimum": minimum,
            "maximum": limit,
            "description": f"Bytes; at most {limit} (`{setting}`); above it, 413 `FILE_TOO_LARGE`.",
        }

    @with_schema(schema)
    def clean_size(raw: Any) -> int:
        # JSON integers only: "12", 12.5 and true are refused rather than coerced.
        value = json_integer(raw)
        if value is None:
            raise serializers.ValidationError("Must be an integer.")
        if value < minimum:
            raise serializers.ValidationError(f"Must be at least {minimum}.{hint}")
        return value

    return clean_size


clean_size = size_rule("SERVICE_MAX_SINGLE_UPLOAD_BYTES")


@with_schema(
    lambda: {
        "type": "string",
        "maxLength": 255,
        "pattern": f"^[^{_CONTROL}]*$",
        "description": "Text without control characters.",
    }
)
def clean_search(value: Any) -> str:
    if not isinstance(value, str) or re.search(f"[{_CONTROL}]", value):
        raise serializers.ValidationError("Must be text without control characters.")
    if len(value) > 255:
        raise serializers.ValidationError("At most 255 characters.")
    return value


# An ISO 8601 UTC timestamp: a date, a time to the second with an optional fraction of up to
# six digits, and the zone as "Z" or "+00:00" (the API writes "Z"; any other offset is refused
# rather than converted, so a client's clock mistake is seen, not guessed at).
EXPIRES_AT_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|\+00:00)$"
)
_EXPIRES_AT = re.compile(EXPIRES_AT_PATTERN)


def _expires_at_schema() -> Schema:
    return {
        "type": ["string", "null"],
        "format": "date-time",
        "pattern": EXPIRES_AT_PATTERN,
        "description": "When the file deletes itself (as DELETE would; restorable in the grace "
        "window), as an ISO 8601 UTC timestamp (`Z` or `+00:00`). It must be in the future "
        f"and at most {settings.SERVICE_MAX_EXPIRY_DAYS} days ahead "
        "(`SERVICE_MAX_EXPIRY_DAYS`); null means never.",
        "example": "2027-01-31T00:00:00.000Z",
    }


@with_schema(_expires_at_schema)
def clean_expires_at(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _EXPIRES_AT.fullmatch(value):
        raise serializers.ValidationError(
            "Must be an ISO 8601 UTC timestamp such as '2027-01-31T00:00:00Z', or null."
        )
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:  # a month 13, a February 30th
        raise serializers.ValidationError("Must be a real date and time.") from exc
    now = timezone.now()
    if moment <= now:
        raise serializers.ValidationError("Must be in the future.")
    if moment > now + timedelta(days=settings.SERVICE_MAX_EXPIRY_DAYS):
        raise serializers.ValidationError(
            f"Must be at most {settings.SERVICE_MAX_EXPIRY_DAYS} days ahead."
        )
    return moment
