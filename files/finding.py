"""The listing's filters for finding files: ``metadata[<key>]=<value>`` and ``recursive=true``
with ``path``. Each is read and checked here and turned into a ``Q`` the list's query ANDs
with its other filters, so it combines with every filter, sort and cursor.

- Metadata: files whose metadata has the top-level ``key`` equal to the string ``value``, or
  to the number or boolean whose JSON text ``value`` is (``metadata[year]=2026`` matches
  ``2026`` and ``"2026"``). Each alternative is a containment (``metadata @> {...}``), which
  the GIN index file_metadata (jsonb_path_ops) answers; filters on several keys are ANDed.
- Recursive: the folder itself and every folder below it, a prefix (``path LIKE 'a/b/%'``)
  that the text_pattern_ops index file_path_prefix answers.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from django.db.models import Q
from rest_framework import serializers

from files.validation import MAX_METADATA_KEY_LENGTH
from storage_service.errors import ValidationError
from storage_service.serializers import Schema, with_schema

MAX_METADATA_FILTERS = 10
# Characters (so at most four times as many bytes of UTF-8): a key is as long as a stored
# key may be; a value is compared with stored metadata, and a longer one is of no use to
# a search.
MAX_METADATA_VALUE_LENGTH = 256
_PARAM = re.compile(r"metadata\[(.*)\]", re.DOTALL)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# JSON's number grammar (RFC 8259), so "2026" and "-1.5e3" are numbers and "0x10", "+1",
# "1." and " 1" are only strings.
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_JSON_NUMBER_MAX_CHARS = 40


def metadata_param_key(name: str) -> str | None:
    """The key of a ``metadata[<key>]`` query parameter's name; None for another name."""
    match = _PARAM.fullmatch(name)
    return match[1] if match else None


def metadata_filters_of(params: Mapping[str, str]) -> dict[str, str]:
    """The ``metadata[<key>]`` parameters of a query, each checked: at most
    MAX_METADATA_FILTERS, keys of 1 to MAX_METADATA_KEY_LENGTH characters, values of at most
    MAX_METADATA_VALUE_LENGTH, neither with control characters; anything else is a 400
    naming the parameter."""
    found: dict[str, str] = {}
    errors: dict[str, list[str]] = {}
    for name, value in params.items():
        key = metadata_param_key(name)
        if key is None:
            continue
        problem = _key_problem(key) or _value_problem(value)
        if problem:
            errors[name] = [problem]
        found[key] = value
    if len(found) > MAX_METADATA_FILTERS:
        errors["metadata"] = [f"At most {MAX_METADATA_FILTERS} metadata[<key>] filters."]
    if errors:
        raise ValidationError("The query is invalid.", details=errors)
    return found


def _key_problem(key: str) -> str | None:
    if not key or len(key) > MAX_METADATA_KEY_LENGTH:
        return f"The key must be 1 to {MAX_METADATA_KEY_LENGTH} characters."
    if _CONTROL.search(key):
        return "The key must not contain control characters."
    return None


def _value_problem(value: str) -> str | None:
    if len(value) > MAX_METADATA_VALUE_LENGTH:
        return f"The value must be at most {MAX_METADATA_VALUE_LENGTH} characters."
    if _CONTROL.search(value):
        return "The value must not contain control characters."
    return None


def _alternatives(value: str) -> list[Any]:
    """The JSON values ``value`` stands for: itself as a string, and the number or boolean
    whose JSON text it is."""
    values: list[Any] = [value]
    if value in ("true", "false"):
        values.append(value == "true")
    elif len(value) <= _JSON_NUMBER_MAX_CHARS and _JSON_NUMBER.fullmatch(value):
        number = json.loads(value)
        # 1e999 reads as infinity, which JSON (and jsonb) cannot hold: it matches no number.
        if not (isinstance(number, float) and not math.isfinite(number)):
            values.append(number)
    return values


def metadata_q(filters: Mapping[str, str]) -> Q:
    """Files whose metadata matches every filter (one containment per alternative)."""
    matched = Q()
    for key, value in filters.items():
        either = Q()
        for alternative in _alternatives(value):
            either |= Q(metadata__contains={key: alternative})
        matched &= either
    return matched


def subtree_q(path: str) -> Q:
    """The folder ``path`` and every folder below it (a prefix the index can range over)."""
    # startswith escapes LIKE's wildcards itself: a folder named "a_b" matches only itself.
    return Q(path=path) | Q(path__startswith=path + "/")


def _metadata_schema() -> Schema:
    return {
        "type": "object",
        "maxProperties": MAX_METADATA_FILTERS,
        "propertyNames": {
            "minLength": 1,
            "maxLength": MAX_METADATA_KEY_LENGTH,
            "pattern": "^[^\\x00-\\x1f\\x7f]+$",
        },
        "additionalProperties": {
            "type": "string",
            "maxLength": MAX_METADATA_VALUE_LENGTH,
            "pattern": "^[^\\x00-\\x1f\\x7f]*$",
        },
        "x-style": "deepObject",
    }


@with_schema(_metadata_schema)
def clean_metadata_param(value: Any) -> None:
    """A bare ``metadata=`` parameter: the filters are ``metadata[<key>]=<value>``."""
    raise serializers.ValidationError("Filter with metadata[<key>]=<value>.")


@with_schema(lambda: {"type": "boolean", "default": False})
def clean_recursive(value: Any) -> bool:
    if value not in ("true", "false"):
        raise serializers.ValidationError("Must be true or false.")
    return bool(value == "true")
