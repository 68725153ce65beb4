"""Bandwidth counted in Redis on a hot path, and folded into ``BandwidthUsage`` off it.

A delivery URL's redirect (delivery/resolution.py) counts its bytes here, in the Redis round
trip that also counts the project's resolution budget, instead of an upsert into PostgreSQL
per redirect. The counts wait in one Redis hash, a field per tenant, UTC day and figure
(``<project>|<mode>|<day>|bytes`` and ``…|downloads``); the fold (``bandwidth_fold``, a beat
task every SERVICE_BANDWIDTH_FOLD_INTERVAL_SECONDS) adds them to the day's rows in one
statement. What a user reads (``GET /v1/usage``, the admin, the console) is
``BandwidthUsage``: the same figures as a synchronous upsert once the fold has run.

The fold renames the hash before reading it, so counts added meanwhile wait for the next
fold, and deletes the renamed hash only after its statement commits: a fold that dies before
committing leaves it to the next fold, which folds it first.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime
from functools import lru_cache

import redis
from django.conf import settings
from django.db import connection, transaction

from accounts.models import BandwidthUsage, Project
from storage_service.redis_keys import redis_key

# Waiting counts; the one being folded.
PENDING = "bandwidth:pending"
FOLDING = "bandwidth:folding"
# Only one fold at a time (two would fold the same renamed hash twice).
_FOLD_LOCK = "SELECT pg_try_advisory_xact_lock(hashtextextended('bandwidth-fold', 0))"


@lru_cache(maxsize=1)
def client() -> redis.Redis:
    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=0.25, socket_connect_timeout=0.25
    )


def count_in(
    pipe: redis.client.Pipeline, *, project_id: str, mode: str, size: int, downloads: int = 1
) -> None:
    """Add ``downloads`` of ``size`` bytes in all to today's (UTC) pending counts, in
    ``pipe`` (negative: taken back)."""
    field = f"{project_id}|{mode}|{datetime.now(UTC).date().isoformat()}"
    pending = redis_key(PENDING)
    pipe.hincrby(pending, f"{field}|bytes", size)
    pipe.hincrby(pending, f"{field}|downloads", downloads)


_FOLD_UPSERT = (
    f"INSERT INTO {BandwidthUsage._meta.db_table} AS u (project_id, mode, day, bytes, downloads)"
    " SELECT * FROM unnest(%s::text[], %s::text[], %s::date[], %s::bigint[], %s::bigint[])"
    " ON CONFLICT (project_id, mode, day) DO UPDATE SET"
    " bytes = u.bytes + EXCLUDED.bytes, downloads = u.downloads + EXCLUDED.downloads"
)


def bandwidth_fold() -> int:
    """Add the pending counts to ``BandwidthUsage`` in one statement; how many tenant-days."""
    store = client()
    pending, folding = redis_key(PENDING), redis_key(FOLDING)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_FOLD_LOCK)
            (locked,) = cursor.fetchone()
        if not locked:
            return 0
        if not store.exists(folding):
            try:
                store.rename(pending, folding)
            except redis.ResponseError:  # nothing pending
                return 0
        totals: dict[tuple[str, str, date], list[int]] = defaultdict(lambda: [0, 0])
        for raw_field, raw_value in store.hgetall(folding).items():
            text = raw_field.decode() if isinstance(raw_field, bytes) else raw_field
            project_id, mode, day, figure = text.split("|")
            at = 0 if figure == "bytes" else 1
            totals[(project_id, mode, date.fromisoformat(day))][at] += int(raw_value)
        rows = [(*tenant_day, figures) for tenant_day, figures in totals.items()]
        if rows:
            # A project deleted since its redirects: its counts go with it.
            existing = set(
                Project.objects.filter(id__in={row[0] for row in rows}).values_list("id", flat=True)
            )
            rows = [row for row in rows if row[0] in existing]
        if rows:
            with connection.cursor() as cursor:
                cursor.execute(
                    _FOLD_UPSERT,
                    [
                        [row[0] for row in rows],
                        [row[1] for row in rows],
                        [row[2] for row in rows],
                        [row[3][0] for row in rows],
                        [row[3][1] for row in rows],
                    ],
                )
    # Committed (or, inside an outer transaction, part of it): the renamed hash is spent.
    store.delete(folding)
    return len(rows)
