from __future__ import annotations

from functools import cache

from accounts.keys import hash_key, is_well_formed
from accounts.models import ApiKey, Organization, Project
from storage_service.fastfetch import columns, fetch_row, instance


@cache
def _resolve_sql() -> tuple[str, int, int]:
    key_names, key_cols = columns(ApiKey)
    project_names, project_cols = columns(Project)
    _, org_cols = columns(Organization)
    sql = (
        f"SELECT {key_cols}, {project_cols}, {org_cols} FROM accounts_apikey"
        " JOIN accounts_project ON accounts_project.id = accounts_apikey.project_id"
        " JOIN accounts_organization"
        " ON accounts_organization.id = accounts_project.organization_id"
        " WHERE accounts_apikey.key_hash = %s AND accounts_apikey.revoked_at IS NULL"
    )
    return sql, len(key_names), len(key_names) + len(project_names)


def api_key_resolve(*, raw_key: str) -> ApiKey | None:
    """The active key for a raw bearer token, with its project and organization, or None.

    Runs on every request, so it is one hand-built query (storage_service/fastfetch.py).
    Revocation takes effect at once: nothing is cached.
    """
    if not is_well_formed(raw_key):
        return None
    sql, project_at, organization_at = _resolve_sql()
    row = fetch_row(sql, [hash_key(raw_key)])
    if row is None:
        return None
    api_key = instance(ApiKey, row[:project_at])
    project = instance(Project, row[project_at:organization_at])
    project.organization = instance(Organization, row[organization_at:])
    api_key.project = project
    return api_key
