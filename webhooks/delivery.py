"""Sending deliveries: claim due rows, POST them concurrently, write the outcomes back.

One call handles a batch (an event's deliveries to all its endpoints, or a sweep's page):

1. Claim: one ``UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED)`` leases the due rows
   and returns, joined, everything the requests need (url, secret, event). A row another
   worker holds, a row not due, or one already DELIVERED/FAILED is skipped, so a message
   sent twice, a sweep racing a message, or any number of workers send each attempt once.
2. Send: every request at once on a thread pool, over keep-alive connections pooled per
   (scheme, address, port, host) (webhooks/sender.py). Each host is resolved once per batch,
   every address is checked (see webhooks/network.py) and the connection goes to a checked
   address.
3. Record: one ``UPDATE ... FROM unnest(...)`` writes every outcome and, for failures, the
   next attempt's time from ``SERVICE_WEBHOOK_RETRY_DELAYS_MS``, or FAILED after the last.

The caller (webhooks/tasks.py) enqueues the retries this returns; if that message is lost,
the row still says when it is due and the sweep sends it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from webhooks import sender
from webhooks.envelope import envelope_body
from webhooks.models import Event
from webhooks.network import IPAddress, Target, UrlRefused, checked_addresses, parse_url
from webhooks.signing import signature_header

logger = logging.getLogger(__name__)

USER_AGENT = "SERVICE-Webhooks/1.0"
# An attempt in flight keeps its lease this long past the timeout; only a worker that died
# mid-attempt lets a lease run out, and then the sweep sends the delivery again.
LEASE_MARGIN_SECONDS = 60


@dataclass(frozen=True)
class Claimed:
    id: str
    attempts: int
    url: str
    secret: str
    event_id: str
    event_type: str
    event_created_at: datetime
    event_data: Any
    claimed_at: datetime


@dataclass(frozen=True)
class Outcome:
    id: str
    ok: bool
    status: int | None
    error: str | None


@dataclass(frozen=True)
class Retry:
    ids: list[str]
    at: datetime


_CLAIM_COLUMNS = """
    d.id, d.attempts, e.url, e.secret, ev.id, ev.type, ev.created_at, ev.data, now()
"""

_CLAIM_BY_ID = f"""
WITH due AS (
    SELECT id FROM webhooks_delivery
    WHERE id = ANY(%(ids)s) AND status = 'PENDING' AND next_attempt_at <= now()
      AND (leased_until IS NULL OR leased_until <= now())
    FOR UPDATE SKIP LOCKED
)
UPDATE webhooks_delivery AS d SET leased_until = now() + %(lease)s * interval '1 second'
FROM due, webhooks_endpoint AS e, webhooks_event AS ev
WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id
RETURNING {_CLAIM_COLUMNS}
"""

_CLAIM_OVERDUE = f"""
WITH due AS (
    SELECT id FROM webhooks_delivery
    WHERE status = 'PENDING' AND next_attempt_at <= now() - %(grace)s * interval '1 second'
      AND (leased_until IS NULL OR leased_until <= now())
    ORDER BY next_attempt_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE webhooks_delivery AS d SET leased_until = now() + %(lease)s * interval '1 second'
FROM due, webhooks_endpoint AS e, webhooks_event AS ev
WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id
RETURNING {_CLAIM_COLUMNS}
"""

# Old values on the right of SET: ``d.attempts`` is the count before this attempt. A
# ``next_attempt_at`` later than the claim means a redeliver came in while the attempt was in
# flight; it is kept, so the redelivery still happens.
_RECORD = """
UPDATE webhooks_delivery AS d SET
    attempts = d.attempts + 1,
    response_status = v.code,
    last_error = v.error,
    leased_until = NULL,
    delivered_at = CASE WHEN v.ok THEN now() ELSE d.delivered_at END,
    status = CASE
        WHEN v.ok THEN 'DELIVERED'
        WHEN d.next_attempt_at > %(claimed)s THEN 'PENDING'
        WHEN d.attempts < cardinality(%(delays)s::int[]) THEN 'PENDING'
        ELSE 'FAILED' END,
    next_attempt_at = CASE
        WHEN v.ok THEN NULL
        WHEN d.next_attempt_at > %(claimed)s THEN d.next_attempt_at
        WHEN d.attempts < cardinality(%(delays)s::int[])
            THEN now() + (%(delays)s::int[])[d.attempts + 1] * interval '1 millisecond'
        ELSE NULL END
FROM unnest(%(ids)s::text[], %(oks)s::bool[], %(codes)s::int[], %(errors)s::text[])
    AS v(id, ok, code, error)
WHERE d.id = v.id
RETURNING d.id, d.status, d.next_attempt_at
"""


def _lease_seconds() -> int:
    return int(settings.SERVICE_WEBHOOK_TIMEOUT_SECONDS) + LEASE_MARGIN_SECONDS


def _write(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Run one claiming or recording statement, committed without waiting for the WAL flush.

    Delivery is at least once already: if the database crashed within the fraction of a
    second before the flush, a lost lease or outcome only means the attempt is made again.
    In exchange, no worker thread waits for a disk flush twice per batch.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")
        cursor.execute(sql, params)
        return [tuple(row) for row in cursor.fetchall()]


def _claim(sql: str, params: dict[str, Any]) -> list[Claimed]:
    rows = _write(sql, {**params, "lease": _lease_seconds()})
    return [Claimed(*row) for row in rows]


def claim_by_id(ids: Sequence[str]) -> list[Claimed]:
    return _claim(_CLAIM_BY_ID, {"ids": list(ids)})


def claim_overdue(limit: int) -> list[Claimed]:
    grace = int(settings.SERVICE_WEBHOOK_SWEEP_GRACE_SECONDS)
    return _claim(_CLAIM_OVERDUE, {"grace": grace, "limit": limit})


# --- Sending ----------------------------------------------------------------------------------


def claimed_event(claimed: Claimed) -> Event:
    """The event of a claimed row (read in the claim's join), for webhooks.envelope."""
    data = claimed.event_data
    if isinstance(data, str | bytes):  # Django's psycopg backend hands jsonb over as text
        data = json.loads(data)
    return Event(
        id=claimed.event_id,
        type=claimed.event_type,
        created_at=claimed.event_created_at,
        data=data,
    )


class _Executor:
    """The per-process thread pool that sends a batch's requests at once.

    Made lazily and keyed by process id: Celery's prefork pool forks workers, and threads made
    before a fork do not survive it.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.pool = ThreadPoolExecutor(
            max_workers=int(settings.SERVICE_WEBHOOK_CONCURRENCY),
            thread_name_prefix="webhook-send",
        )


_executor: _Executor | None = None
_executor_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None or _executor.pid != os.getpid():
            _executor = _Executor()
        return _executor.pool


def post(target: Target, addresses: Sequence[IPAddress], body: bytes, secret: str) -> Outcome:
    """One attempt: POST the signed body; a 2xx within the timeout is the only success."""
    headers = {
        "Host": target.host_header,
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "SERVICE-Signature": signature_header(secret, int(time.time()), body),
    }
    result = sender.post(
        target,
        addresses,
        (target.request_path, body, headers),
        timeout=float(settings.SERVICE_WEBHOOK_TIMEOUT_SECONDS),
        pool=sender.connections(int(settings.SERVICE_WEBHOOK_CONCURRENCY)),
    )
    return Outcome("", result.ok, result.status, result.error)


def send_all(claimed: Sequence[Claimed]) -> list[Outcome]:
    """Every claimed delivery, concurrently; one outcome per delivery, in order."""
    bodies: dict[str, bytes] = {}
    targets: dict[str, Target | str] = {}
    for item in claimed:
        if item.event_id not in bodies:
            bodies[item.event_id] = envelope_body(claimed_event(item))
        if item.url not in targets:
            try:
                targets[item.url] = parse_url(item.url)
            except UrlRefused as exc:
                targets[item.url] = str(exc)
    # Resolve each host once for the whole batch: one lookup, every address checked.
    resolved: dict[tuple[str, int], list[IPAddress] | str] = {}
    for target in targets.values():
        if isinstance(target, Target) and (target.host, target.port) not in resolved:
            try:
                resolved[(target.host, target.port)] = checked_addresses(target)
            except UrlRefused as exc:
                resolved[(target.host, target.port)] = f"Refused: {exc}"

    def attempt(item: Claimed) -> Outcome:
        target = targets[item.url]
        if isinstance(target, str):
            return Outcome(item.id, False, None, sender.shorten(f"Refused: {target}"))
        addresses = resolved[(target.host, target.port)]
        if isinstance(addresses, str):
            return Outcome(item.id, False, None, sender.shorten(addresses))
        try:
            outcome = post(target, addresses, bodies[item.event_id], item.secret)
        except Exception as exc:  # a bug must cost one attempt, never the batch's outcomes
            logger.exception("webhook delivery %s: unexpected error", item.id)
            outcome = Outcome(
                "", False, None, sender.shorten(f"Internal error: {type(exc).__name__}")
            )
        return Outcome(item.id, outcome.ok, outcome.status, outcome.error)

    if len(claimed) == 1:
        return [attempt(claimed[0])]
    return list(executor().map(attempt, claimed))


# --- Recording --------------------------------------------------------------------------------


def record(outcomes: Sequence[Outcome], claimed_at: datetime) -> list[Retry]:
    """Write every outcome in one statement; return the retries to schedule, by due time."""
    if not outcomes:
        return []
    rows = _write(
        _RECORD,
        {
            "ids": [o.id for o in outcomes],
            "oks": [o.ok for o in outcomes],
            "codes": [o.status for o in outcomes],
            "errors": [o.error for o in outcomes],
            "claimed": claimed_at,
            "delays": list(settings.SERVICE_WEBHOOK_RETRY_DELAYS_MS),
        },
    )
    due: dict[datetime, list[str]] = defaultdict(list)
    for delivery_id, status, next_attempt_at in rows:
        if status == "PENDING" and next_attempt_at is not None:
            due[next_attempt_at].append(delivery_id)
    return [Retry(ids=ids, at=at) for at, ids in sorted(due.items())]


def process(claimed: Sequence[Claimed]) -> list[Retry]:
    if not claimed:
        return []
    outcomes = send_all(claimed)
    # All rows of one claim share its timestamp (one statement's now()).
    return record(outcomes, min(item.claimed_at for item in claimed))


def deliver(ids: Iterable[str]) -> list[Retry]:
    """Attempt those of these deliveries that are due now."""
    return process(claim_by_id(list(ids)))


def deliver_overdue(
    *, batch_size: int = 200, budget_seconds: float = 60.0
) -> tuple[int, list[Retry]]:
    """The sweep: send overdue deliveries, page by page, for at most ``budget_seconds``."""
    deadline = time.monotonic() + budget_seconds
    sent = 0
    retries: list[Retry] = []
    while time.monotonic() < deadline:
        claimed = claim_overdue(batch_size)
        if not claimed:
            break
        sent += len(claimed)
        retries.extend(process(claimed))
    return sent, retries
