from __future__ import annotations

import contextlib
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
    Revocation takes effect at once: the answer is never taken from a cache.
    """
    digest = key_hash_of(raw_key)
    if digest is None:
        return None
    query = key_query()
    row = fetch_row(f"SELECT {query.select} FROM {query.joins} WHERE {query.where}", [digest])
    if row is None:
        api_key_forget(digest)
        return None
    _remember(digest, row)
    return api_key_from_row(row)


# Keys this process has resolved, by hash: the row as it was then. What a key *is* never
# changes (its id, project, organization, environment and prefix); whether it is still active
# does, so a known key is only a guess of who is asking, for a caller that checks activity in
# the same statement as its change (the upload start's fast lane: files/fastviews.py).
_KNOWN: dict[str, tuple[Any, ...]] = {}
KNOWN_KEYS_HELD = 10_000


def _remember(digest: str, row: tuple[Any, ...]) -> None:
    if digest not in _KNOWN and len(_KNOWN) >= KNOWN_KEYS_HELD:
        # The oldest remembered (another thread may have just taken it).
        with contextlib.suppress(KeyError, RuntimeError, StopIteration):
            del _KNOWN[next(iter(_KNOWN))]
    _KNOWN[digest] = row


def api_key_known(*, raw_key: str) -> tuple[str, ApiKey] | None:
    """The hash of a raw bearer token and the key this process last resolved it to, without
    asking the database, or None when it has not (or found it revoked). NOT a check that the
    key is active: the caller's own statement must check that (``key_active_sql``)."""
    digest = key_hash_of(raw_key)
    row = None if digest is None else _KNOWN.get(digest)
    if digest is None or row is None:
        return None
    return digest, api_key_from_row(row)


def api_key_forget(digest: str) -> None:
    """Forget a key found revoked (or unknown)."""
    _KNOWN.pop(digest, None)


def key_active_sql() -> str:
    """SQL for the project of the active key whose hash is the one parameter: NULL (so the
    row being written refuses it, its project being NOT NULL) once the key is revoked."""
    return (
        "(SELECT accounts_apikey.project_id FROM accounts_apikey"
        " WHERE accounts_apikey.key_hash = %s AND accounts_apikey.revoked_at IS NULL)"
    )
