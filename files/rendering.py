"""The contract's file object rendered by PostgreSQL, for the list's fast lane (issue 14).

A page of 20 files rendered in Python costs a model instance, a ``file_json`` dict and its
JSON encoding per file: about twice what the rest of the request costs. Here the query that
reads the page also writes each file's JSON text, so the lane only joins the texts.

``file_json`` (files/serializers.py) stays the definition of the shape; this is the same
shape written as SQL, one entry per key of ``FileJson`` in ``file_json``'s order, with the
same condition for each optional key. tests/files/test_rendered_files.py checks the keys
against ``FileJson`` and compares the text with ``file_json``'s, rendered by the API's
renderer, for files in every state and with hostile names and metadata.

Metadata is the one value left to Python: PostgreSQL writes ``jsonb`` with spaces and its
own number forms, so the query returns it as text between the two halves (``head`` ends
with ``"metadata":``, ``tail`` starts after it) and ``metadata_text`` writes it as the
renderer does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Each timestamp as storage_service.timefmt writes it: UTC, milliseconds truncated, "Z".
_TIMESTAMP = (
    """'"' || to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'"""
)


@dataclass(frozen=True)
class _Key:
    name: str  # the FileJson key
    value: str  # SQL of the value's JSON text; {t} is the files_file row's alias
    when: str | None = None  # an optional key's condition (file_json's)


def _json(column: str) -> str:
    return f"to_json({{t}}.{column})::text"


def _nullable(column: str) -> str:
    return f"coalesce(to_json({{t}}.{column})::text, 'null')"


def _timestamp(column: str) -> str:
    return _TIMESTAMP.format(column=f"{{t}}.{column}")


HEAD = (
    _Key("id", _json("id")),
    _Key("filename", _json("filename")),
    _Key("path", _nullable("path")),
    _Key("contentType", _json("content_type")),
    _Key("size", _json("size")),
    _Key("status", _json("status")),
    _Key("version", _json("version")),
)
METADATA = "metadata"  # between HEAD and TAIL, written by metadata_text
TAIL = (
    _Key("createdAt", _timestamp("created_at")),
    _Key("updatedAt", _timestamp("updated_at")),
    _Key(
        "expiresAt",
        f"CASE WHEN {{t}}.expires_at IS NULL THEN 'null' ELSE {_timestamp('expires_at')} END",
    ),
    _Key("uploadedAt", _timestamp("uploaded_at"), when="{t}.uploaded_at IS NOT NULL"),
    # file_json: "if file.checksum" (neither null nor empty).
    _Key("checksum", _json("checksum"), when="coalesce({t}.checksum, '') <> ''"),
    _Key(
        "deletedAt",
        _timestamp("deleted_at"),
        when="{t}.status = 'deleted' AND {t}.deleted_at IS NOT NULL",
    ),
)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _concat(keys: tuple[_Key, ...], alias: str, *, first: bool) -> list[str]:
    parts = []
    for position, key in enumerate(keys):
        separator = "" if first and position == 0 else ","
        label = _literal(f"{separator}{json.dumps(key.name)}:")
        value = key.value.format(t=alias)
        if key.when is None:
            parts.append(f"{label} || {value}")
        else:
            parts.append(
                f"CASE WHEN {key.when.format(t=alias)} THEN {label} || {value} ELSE '' END"
            )
    return parts


def file_json_sql(alias: str) -> tuple[str, str]:
    """SQL of the two halves of a file's JSON text, over the files_file row ``alias``."""
    head = ["'{'", *_concat(HEAD, alias, first=True), _literal(f",{json.dumps(METADATA)}:")]
    tail = [*_concat(TAIL, alias, first=False), "'}'"]
    return " || ".join(f"({part})" for part in head), " || ".join(f"({part})" for part in tail)


def metadata_text(stored: str | None) -> str:
    """The metadata's JSON as the API's renderer writes it, from PostgreSQL's text of it."""
    if stored is None:
        return "null"
    if stored == "{}":
        return stored
    value: Any = json.loads(stored)  # as JSONField reads it
    # DRF's JSONRenderer: compact, UTF-8 as is, no NaN (the U+2028/9 escapes come after,
    # on the whole answer).
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
