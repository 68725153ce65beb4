"""Read queries of the accounts app."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from accounts.keys import hash_key, is_well_formed
from accounts.models import ApiKey, Organization, Project
from storage_service.raw_select import SelectList

_KEY = SelectList(ApiKey, "k")
_PROJECT = SelectList(Project, "p")
_ORGANIZATION = SelectList(Organization, "o")


@dataclass(frozen=True)
class KeyRead:
    """The key lookup as parts of a statement, for a read that also wants one more row of the
    key's tenant in the same round trip (files.selectors.file_shown_with_key): ``columns``
    first in its select list, then its own; ``tables`` as its FROM, which it may extend with a
    LEFT JOIN on ``k`` (the key); ``condition`` in its WHERE, with the key's hash as the
    parameter; ``width`` columns of the row are the key's (``api_key``)."""

    columns: str
    tables: str
    condition: str
    width: int

    def api_key(self, row: Sequence[Any], connection: BaseDatabaseWrapper) -> ApiKey:
        api_key = _KEY.instance(row[:_PROJECT_AT], connection)
        project = _PROJECT.instance(row[_PROJECT_AT:_ORGANIZATION_AT], connection)
        project.organization = _ORGANIZATION.instance(
            row[_ORGANIZATION_AT : self.width], connection
        )
        api_key.project = project
        return api_key


KEY_READ = KeyRead(
    columns=f"{_KEY.sql}, {_PROJECT.sql}, {_ORGANIZATION.sql}",
    tables=(
        f"{ApiKey._meta.db_table} k"
        f" JOIN {Project._meta.db_table} p ON p.id = k.project_id"
        f" JOIN {Organization._meta.db_table} o ON o.id = p.organization_id"
    ),
    condition="k.key_hash = %s AND k.revoked_at IS NULL",
    width=_KEY.width + _PROJECT.width + _ORGANIZATION.width,
)
_PROJECT_AT = _KEY.width
_ORGANIZATION_AT = _PROJECT_AT + _PROJECT.width
# Every request runs this, so it is written once, here: the ORM would compile the same
# statement again for each request, which costs more than PostgreSQL's answer.
_KEY_SQL = f"SELECT {KEY_READ.columns} FROM {KEY_READ.tables} WHERE {KEY_READ.condition}"


def key_hash_of(raw_key: str) -> str | None:
    """What a key is looked up by; None for a token that cannot be an API key."""
    return hash_key(raw_key) if is_well_formed(raw_key) else None


def api_key_resolve(*, raw_key: str) -> ApiKey | None:
    """The active key for a raw bearer token, with its project and organization, or None.

    Read on every request, never from a cache: a revoked key is refused by the next request.
    One statement (key_hash is unique: at most one row).
    """
    key_hash = key_hash_of(raw_key)
    if key_hash is None:
        return None
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(_KEY_SQL, [key_hash])
        row = cursor.fetchone()
    return None if row is None else KEY_READ.api_key(row, connection)
