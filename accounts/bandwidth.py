"""Bandwidth counted in Redis on a hot path, and folded into ``BandwidthUsage`` off it.

A delivery URL's redirect (delivery/resolution.py) counts its bytes here, in batches sent to
Redis (below), instead of an upsert into PostgreSQL per redirect. The counts wait in one Redis
hash, a field per tenant, UTC day and figure (``<project>|<mode>|<day>|bytes`` and
``…|downloads``); the fold (``bandwidth_fold``, a beat
task every SERVICE_BANDWIDTH_FOLD_INTERVAL_SECONDS) adds them to the day's rows in one
statement. What a user reads (``GET /v1/usage``, the admin, the console) is
``BandwidthUsage``: the same figures as a synchronous upsert once the fold has run.

Each fold is added exactly once, whichever step a fold dies at:

1. Under a transaction-scoped advisory lock (one fold at a time; another returns at once), the
   fold moves the pending hash to a key of its own, ``bandwidth:fold:<id>``, and adds the id
   to the set ``bandwidth:folds``, in one MULTI: counts added later wait for the next fold.
2. In the same transaction it adds up every hash the set names whose id has no
   ``BandwidthFold`` row (its own, and any left by a fold that died before committing), and
   writes a row for each of those ids beside the counts.
3. Only after the commit does it delete those hashes and their ids (one MULTI). A fold that
   died before this step, or whose Redis failed, left hashes whose ids have rows: the next
   fold deletes them without adding them again, and drops the rows whose hashes are gone.

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
import uuid
from collections import defaultdict
from datetime import UTC, date, datetime
from functools import lru_cache

import redis
from django.conf import settings
from django.db import connection, transaction

from accounts.models import BandwidthFold, BandwidthUsage, Project
from storage_service.redis_keys import redis_key

logger = logging.getLogger(__name__)

# Waiting counts; the ids of the folds whose hashes are still in Redis; a fold's hash.
PENDING = "bandwidth:pending"
FOLDS = "bandwidth:folds"


def fold_key(fold_id: str) -> str:
    return redis_key(f"bandwidth:fold:{fold_id}")


# Only one fold at a time: a second would take the same hashes, and wait on the first's rows.
FOLD_LOCK = "SELECT pg_try_advisory_xact_lock(hashtextextended('bandwidth-fold', 0))"


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
    """Add the pending counts, and any a fold left uncommitted, to ``BandwidthUsage`` in one
    statement, each exactly once (the steps are in the module's docstring); how many
    tenant-days."""
    flush()  # this process's own batch first (a single-process deployment, the tests)
    store = client()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(FOLD_LOCK)
            (locked,) = cursor.fetchone()
        if not locked:
            return 0
        fold_ids = _take_pending(store)
        if not fold_ids:
            return 0
        recorded = {
            str(fold_id)
            for fold_id in BandwidthFold.objects.filter(id__in=fold_ids).values_list(
                "id", flat=True
            )
        }
        unfolded = [fold_id for fold_id in fold_ids if fold_id not in recorded]
        added = _add_to_rows(_add_up(store, unfolded))
        BandwidthFold.objects.bulk_create(BandwidthFold(id=fold_id) for fold_id in unfolded)
        # The rows of folds whose hashes are gone from Redis have done their work.
        BandwidthFold.objects.exclude(id__in=fold_ids).delete()
        # Robust: a Redis failure here leaves spent hashes, which the next fold deletes.
        transaction.on_commit(lambda: _delete_spent(store, fold_ids), robust=True)
    return added


def _take_pending(store: redis.Redis) -> list[str]:
    """Move the pending hash to a new fold's key (when there is one); the ids of every fold
    whose hash is in Redis, the new one included."""
    if store.exists(redis_key(PENDING)):
        fold_id = str(uuid.uuid4())
        with store.pipeline(transaction=True) as pipe:
            pipe.sadd(redis_key(FOLDS), fold_id)
            pipe.rename(redis_key(PENDING), fold_key(fold_id))
            # Only a fold takes the hash away, and only one folds at a time; were it gone, the
            # id names an empty hash, which adds nothing and is deleted like any other.
            pipe.execute(raise_on_error=False)
    return sorted(
        member.decode() if isinstance(member, bytes) else member
        for member in store.smembers(redis_key(FOLDS))
    )


def _add_up(store: redis.Redis, fold_ids: list[str]) -> list[tuple[str, str, date, int, int]]:
    """The counts in the folds' hashes, summed per tenant-day."""
    totals: dict[tuple[str, str, date], list[int]] = defaultdict(lambda: [0, 0])
    for fold_id in fold_ids:
        for raw_field, raw_value in store.hgetall(fold_key(fold_id)).items():
            text = raw_field.decode() if isinstance(raw_field, bytes) else raw_field
            project_id, mode, day, figure = text.split("|")
            at = 0 if figure == "bytes" else 1
            totals[(project_id, mode, date.fromisoformat(day))][at] += int(raw_value)
    return [(*tenant_day, size, downloads) for tenant_day, (size, downloads) in totals.items()]


def _delete_spent(store: redis.Redis, fold_ids: list[str]) -> None:
    """Delete the hashes of committed folds, and their ids with them."""
    with store.pipeline(transaction=True) as pipe:
        pipe.delete(*(fold_key(fold_id) for fold_id in fold_ids))
        pipe.srem(redis_key(FOLDS), *fold_ids)
        pipe.execute()
