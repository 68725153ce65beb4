"""Read queries of the accounts app."""

from __future__ import annotations

from django.db import DEFAULT_DB_ALIAS, connections

from accounts.keys import hash_key, is_well_formed
from accounts.models import ApiKey, Organization, Project
from storage_service.raw_select import SelectList

_KEY = SelectList(ApiKey, "k")
_PROJECT = SelectList(Project, "p")
_ORGANIZATION = SelectList(Organization, "o")
# Every request runs this, so it is written once, here: the ORM would compile the same
# statement again for each request, which costs more than PostgreSQL's answer.
_KEY_SQL = (
    f"SELECT {_KEY.sql}, {_PROJECT.sql}, {_ORGANIZATION.sql}"
    f" FROM {ApiKey._meta.db_table} k"
    f" JOIN {Project._meta.db_table} p ON p.id = k.project_id"
    f" JOIN {Organization._meta.db_table} o ON o.id = p.organization_id"
    " WHERE k.key_hash = %s AND k.revoked_at IS NULL"
)
_PROJECT_AT = _KEY.width
_ORGANIZATION_AT = _PROJECT_AT + _PROJECT.width


def api_key_resolve(*, raw_key: str) -> ApiKey | None:
    """The active key for a raw bearer token, with its project and organization, or None.

    Read on every request, never from a cache: a revoked key is refused by the next request.
    One statement (key_hash is unique: at most one row).
    """
    if not is_well_formed(raw_key):
        return None
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(_KEY_SQL, [hash_key(raw_key)])
        row = cursor.fetchone()
    if row is None:
        return None
    api_key = _KEY.instance(row[:_PROJECT_AT], connection)
    project = _PROJECT.instance(row[_PROJECT_AT:_ORGANIZATION_AT], connection)
    project.organization = _ORGANIZATION.instance(row[_ORGANIZATION_AT:], connection)
    api_key.project = project
    return api_key
