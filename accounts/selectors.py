"""Read queries of the accounts app."""

from __future__ import annotations

from django.db import DEFAULT_DB_ALIAS, connections

from accounts.keys import hash_key, is_well_formed
from accounts.models import ApiKey, Organization, Project
from storage_service.fields import concrete_columns

_KEY_FIELDS, _key_columns = concrete_columns(ApiKey, "k")
_PROJECT_FIELDS, _project_columns = concrete_columns(Project, "p")
_ORGANIZATION_FIELDS, _organization_columns = concrete_columns(Organization, "o")
# Every request runs this, so it is written once, here: the ORM would compile the same
# statement again for each request, which costs more than PostgreSQL's answer. None of these
# fields converts its value from the database (no JSON), so Model.from_db takes the row as is.
_KEY_SQL = (
    f"SELECT {_key_columns}, {_project_columns}, {_organization_columns}"
    f" FROM {ApiKey._meta.db_table} k"
    f" JOIN {Project._meta.db_table} p ON p.id = k.project_id"
    f" JOIN {Organization._meta.db_table} o ON o.id = p.organization_id"
    " WHERE k.key_hash = %s AND k.revoked_at IS NULL"
)
_PROJECT_AT = len(_KEY_FIELDS)
_ORGANIZATION_AT = _PROJECT_AT + len(_PROJECT_FIELDS)


def api_key_resolve(*, raw_key: str) -> ApiKey | None:
    """The active key for a raw bearer token, with its project and organization, or None.

    Read on every request, never from a cache: a revoked key is refused by the next request.
    One statement (key_hash is unique: at most one row).
    """
    if not is_well_formed(raw_key):
        return None
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(_KEY_SQL, [hash_key(raw_key)])
        row = cursor.fetchone()
    if row is None:
        return None
    api_key = ApiKey.from_db(DEFAULT_DB_ALIAS, _KEY_FIELDS, row[:_PROJECT_AT])
    project = Project.from_db(DEFAULT_DB_ALIAS, _PROJECT_FIELDS, row[_PROJECT_AT:_ORGANIZATION_AT])
    project.organization = Organization.from_db(
        DEFAULT_DB_ALIAS, _ORGANIZATION_FIELDS, row[_ORGANIZATION_AT:]
    )
    api_key.project = project
    return api_key
