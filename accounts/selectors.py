"""Read queries of the accounts app."""

from __future__ import annotations

from accounts.keys import hash_key, is_well_formed
from accounts.models import ApiKey


def api_key_resolve(*, raw_key: str) -> ApiKey | None:
    """The active key for a raw bearer token, with its project and organization, or None.

    Read on every request, never from a cache: a revoked key is refused by the next request.
    """
    if not is_well_formed(raw_key):
        return None
    # key_hash is unique: no ORDER BY needed to take the one row (as .first() would add).
    found = ApiKey.objects.select_related("project__organization").filter(
        key_hash=hash_key(raw_key), revoked_at__isnull=True
    )[:1]
    return next(iter(found), None)
