from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from accounts.keys import hash_key, is_well_formed
from accounts.models import ApiKey, Organization, Project
from storage_service.fastfetch import columns, fetch_row, instance


@dataclass(frozen=True)
class KeyQuery:
    """The key lookup's SQL in parts, so that a hot read can join its resource to it (one
    round trip for both; files/selectors.py:file_get_with_key)."""

    select: str  # the key's, project's and organization's columns
    joins: str  # FROM accounts_apikey and its joins
    where: str  # the active key with hash %s
    width: int  # how many columns ``select`` has


@cache
def key_query() -> KeyQuery:
    key_names, key_cols = columns(ApiKey)
    project_names, project_cols = columns(Project)
    org_names, org_cols = columns(Organization)
    return KeyQuery(
        select=f"{key_cols}, {project_cols}, {org_cols}",
        joins=(
            "accounts_apikey"
            " JOIN accounts_project ON accounts_project.id = accounts_apikey.project_id"
            " JOIN accounts_organization"
            " ON accounts_organization.id = accounts_project.organization_id"
        ),
        where="accounts_apikey.key_hash = %s AND accounts_apikey.revoked_at IS NULL",
        width=len(key_names) + len(project_names) + len(org_names),
    )


def key_hash_of(raw_key: str) -> str | None:
    """The hash to look a raw bearer token up by, or None for a malformed token."""
    return hash_key(raw_key) if is_well_formed(raw_key) else None


def api_key_from_row(row: Sequence[Any]) -> ApiKey:
    """The key, with its project and organization, from the first ``key_query().width``
    columns of a row."""
    project_at = len(columns(ApiKey)[0])
    organization_at = project_at + len(columns(Project)[0])
    api_key = instance(ApiKey, row[:project_at])
    project = instance(Project, row[project_at:organization_at])
    project.organization = instance(Organization, row[organization_at : key_query().width])
    api_key.project = project
    return api_key


def api_key_resolve(*, raw_key: str) -> ApiKey | None:
    """The active key for a raw bearer token, with its project and organization, or None.

    Runs on every request, so it is one hand-built query (storage_service/fastfetch.py).
    Revocation takes effect at once: nothing is cached.
    """
    digest = key_hash_of(raw_key)
    if digest is None:
        return None
    query = key_query()
    row = fetch_row(f"SELECT {query.select} FROM {query.joins} WHERE {query.where}", [digest])
    return None if row is None else api_key_from_row(row)
