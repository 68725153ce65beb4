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

Batches: a round trip to Redis per redirect is a large share of a resolution's time. So a
process adds its redirects up in memory (``count``) and sends them to the hash in one round
trip (``flush``) once a batch holds SERVICE_BANDWIDTH_BATCH_REDIRECTS redirects, every
SERVICE_BANDWIDTH_FLUSH_SECONDS (a thread of the process), and at exit where the interpreter
runs its exit handlers (granian ends its workers without them). The trade-off, as for the API
keys' leases (accounts/throttling.py): a process that crashes or stops loses at most one batch
of bytes, and usage shows a redirect up to that interval later, on top of the fold's. With
Redis down, a batch is written to ``BandwidthUsage`` at once instead. A fold sends its own
process's batch first (a single-process deployment, the tests).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import defaultdict
from datetime import UTC, date, datetime
from functools import lru_cache

import redis
from django.conf import settings
from django.db import connection, transaction

from accounts.models import BandwidthUsage, Project
from storage_service.redis_keys import redis_key

logger = logging.getLogger(__name__)

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


TenantDay = tuple[str, str, str]  # project id, mode, UTC day (ISO)


class Batch:
    """This process's redirects not sent to Redis yet: bytes and downloads per tenant-day."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[TenantDay, list[int]] = defaultdict(lambda: [0, 0])
        self.redirects = 0
        self.flusher_pid = 0  # the process whose thread flushes on the interval

    def take(self) -> dict[TenantDay, list[int]]:
        with self.lock:
            counts, self.counts = self.counts, defaultdict(lambda: [0, 0])
            self.redirects = 0
        return counts


_batch = Batch()


def count(*, project_id: str, mode: str, size: int) -> None:
    """Add one redirect of ``size`` bytes to today's (UTC) counts of the tenant, in this
    process's batch; the batch is sent when full (by this call), else by the flusher."""
    if _batch.flusher_pid != os.getpid():
        _start_flusher()
    day = datetime.now(UTC).date().isoformat()
    with _batch.lock:
        figures = _batch.counts[(project_id, mode, day)]
        figures[0] += size
        figures[1] += 1
        _batch.redirects += 1
        full = _batch.redirects >= settings.SERVICE_BANDWIDTH_BATCH_REDIRECTS
    if full:
        flush()


def flush() -> None:
    """Send this process's batch to the pending counts in one round trip; with Redis down,
    add it to ``BandwidthUsage`` at once (one statement)."""
    counts = _batch.take()
    if not counts:
        return
    try:
        pipe = client().pipeline(transaction=True)
        pending = redis_key(PENDING)
        for (project_id, mode, day), (size, downloads) in counts.items():
            field = f"{project_id}|{mode}|{day}"
            pipe.hincrby(pending, f"{field}|bytes", size)
            pipe.hincrby(pending, f"{field}|downloads", downloads)
        pipe.execute()
    except redis.RedisError as exc:
        logger.warning(
            "bandwidth written to PostgreSQL: Redis unavailable (%s)", type(exc).__name__
        )
        _add_to_rows(
            [
                (project_id, mode, date.fromisoformat(day), size, downloads)
                for (project_id, mode, day), (size, downloads) in counts.items()
            ]
        )


def _start_flusher() -> None:
    # Started by the first count of each process (a server's worker, never a parent that
    # forks it), as is the flush at exit.
    with _batch.lock:
        if _batch.flusher_pid == os.getpid():
            return
        _batch.flusher_pid = os.getpid()
    threading.Thread(target=_flush_every_interval, name="bandwidth-flush", daemon=True).start()
    atexit.register(flush)


def _flush_every_interval() -> None:
    while True:
        time.sleep(settings.SERVICE_BANDWIDTH_FLUSH_SECONDS)
        try:
            flush()
        except Exception:
            logger.exception("bandwidth batch not sent")
        finally:
            # This thread's own connection, opened only when Redis was down.
            connection.close()


_FOLD_UPSERT = (
    f"INSERT INTO {BandwidthUsage._meta.db_table} AS u (project_id, mode, day, bytes, downloads)"
    " SELECT * FROM unnest(%s::text[], %s::text[], %s::date[], %s::bigint[], %s::bigint[])"
    " ON CONFLICT (project_id, mode, day) DO UPDATE SET"
    " bytes = u.bytes + EXCLUDED.bytes, downloads = u.downloads + EXCLUDED.downloads"
)


def _add_to_rows(rows: list[tuple[str, str, date, int, int]]) -> int:
    """Add (project, mode, day, bytes, downloads) rows to ``BandwidthUsage`` in one
    statement; how many were added. A project deleted since its redirects: its counts go
    with it."""
    if rows:
        existing = set(
            Project.objects.filter(id__in={row[0] for row in rows}).values_list("id", flat=True)
        )
        rows = [row for row in rows if row[0] in existing]
    if rows:
        with connection.cursor() as cursor:
            cursor.execute(_FOLD_UPSERT, [list(column) for column in zip(*rows, strict=True)])
    return len(rows)


def bandwidth_fold() -> int:
    """Add the pending counts to ``BandwidthUsage`` in one statement; how many tenant-days."""
    flush()
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
        added = _add_to_rows(
            [
                (project_id, mode, day, size, downloads)
                for (project_id, mode, day), (size, downloads) in totals.items()
            ]
        )
    # Committed (or, inside an outer transaction, part of it): the renamed hash is spent.
    store.delete(folding)
    return added
