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

from files.validation import MAX_METADATA_KEY_LENGTH
from storage_service.errors import ValidationError

MAX_METADATA_FILTERS = 10
# Bytes of UTF-8: a value is compared with stored metadata (8 KiB in all), so a longer one
# can match nothing worth a query.
MAX_METADATA_KEY_BYTES = 512
MAX_METADATA_VALUE_BYTES = 1024
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
    MAX_METADATA_FILTERS, keys of 1 to MAX_METADATA_KEY_LENGTH characters (and
    MAX_METADATA_KEY_BYTES bytes), values of at most MAX_METADATA_VALUE_BYTES bytes, neither
    with control characters; anything else is a 400 naming the parameter."""
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
    if len(key.encode("utf-8", "surrogatepass")) > MAX_METADATA_KEY_BYTES:
        return f"The key must be at most {MAX_METADATA_KEY_BYTES} bytes as UTF-8."
    if _CONTROL.search(key):
        return "The key must not contain control characters."
    return None


def _value_problem(value: str) -> str | None:
    if len(value.encode("utf-8", "surrogatepass")) > MAX_METADATA_VALUE_BYTES:
        return f"The value must be at most {MAX_METADATA_VALUE_BYTES} bytes as UTF-8."
    if _CONTROL.search(value):
        return "The value must not contain control characters."
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        return "The value must be valid UTF-8."
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
