"""The JSON body parser: strict JSON, bounded, and only text PostgreSQL can store.

Refused here, once, for every endpoint (a 400 ``VALIDATION_ERROR`` each):

- a body that is not UTF-8, or whose text holds a NUL or a lone UTF-16 surrogate
  ("\\ud800"): valid JSON, but not storable text, so a database error otherwise;
- ``NaN``, ``Infinity`` and numbers that overflow to infinity (``1e400``): not JSON (RFC 8259)
  and refused by ``jsonb``;
- an object with the same key twice: RFC 8259 leaves the meaning open and parsers disagree
  (first or last wins), so a value a proxy checked could differ from the one stored;
- nesting deeper than ``SERVICE_MAX_JSON_DEPTH``: without a cap, a 6 KB body of brackets
  reaches the parser's recursion limit (a RecursionError, which was a 500).

The body's size is bounded before this runs
(``storage_service.middleware.RequestLimitsMiddleware``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ParseError(f"The body has the key {key[:64]!r} twice in one object.")
            seen.add(key)
    return result


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ParseError("A number in the body is too large.")
    return value


def _not_a_number(text: str) -> Any:
    raise ParseError(f"{text} is not a JSON number.")


def depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (a scalar is 0, ``[]`` and ``{}`` 1).
    Breadth first, one level at a time, visiting only containers: no recursion, and a body
    of a million scalars costs nothing."""
    level = 0
    current = [value] if isinstance(value, dict | list) else []
    while current:
        level += 1
        below: list[Any] = []
        for item in current:
            children = item.values() if isinstance(item, dict) else item
            below += [child for child in children if isinstance(child, dict | list)]
        current = below
    return level


class StrictJSONParser(JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        limit = settings.SERVICE_MAX_JSON_DEPTH
        try:
            raw = stream.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError("The body is not UTF-8.") from exc
        try:
            data = json.loads(
                raw,
                object_pairs_hook=_no_duplicates,
                parse_float=_finite,
                parse_constant=_not_a_number,
            )
        except RecursionError as exc:
            # The C parser recurses once per level; far past the limit it hits Python's
            # recursion limit, which is this request's problem, not a bug.
            raise ParseError(f"The body nests arrays and objects more than {limit} deep.") from exc
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        if depth(data) > limit:
            raise ParseError(f"The body nests arrays and objects more than {limit} deep.")
        # A lone surrogate or a NUL can only come from a \u escape: the UTF-8 decoding
        # refuses surrogates and the parser refuses raw control characters. A body with no
        # backslash before a "u" (most of them) needs no second look.
        if "\\u" not in raw:
            return data
        encoded = json.dumps(data, ensure_ascii=False)
        try:
            encoded.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ParseError("The body contains text that is not valid Unicode.") from exc
        if "\\u0000" in encoded:
            raise ParseError("The body must not contain the NUL character.")
        return data
