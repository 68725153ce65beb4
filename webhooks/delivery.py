"""Sending deliveries: claim due rows, POST them concurrently, write the outcomes back.

One call handles a batch (an event's deliveries to all its endpoints, or a sweep's page):

1. Claim: one ``UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED)`` leases the due rows
   and returns, joined, everything the requests need (url, secrets, event). A row another
   worker holds, a row not due, or one already DELIVERED/FAILED is skipped, so a message
   sent twice, a sweep racing a message, or any number of workers send each attempt once.
2. Admit: each row takes a slot of its project, of its destination host and of the process
   (``SERVICE_WEBHOOK_PROJECT_CONCURRENCY``, ``SERVICE_WEBHOOK_HOST_CONCURRENCY``,
   ``SERVICE_WEBHOOK_CONCURRENCY``), or waits in the process's line for one (see Slots); a
   row whose project already has a full line is put back, unleased and due
   ``SERVICE_WEBHOOK_DEFER_MS`` later (not an attempt), with a message for then. So a
   project whose receiver hangs holds a few sending threads, never all of them.
3. Send: every admitted request on the process's thread pool, over keep-alive connections
   pooled per (scheme, address, port, host) (webhooks/sender.py). Each host is resolved once
   per batch, on the sending thread, within ``SERVICE_WEBHOOK_RESOLVE_TIMEOUT_SECONDS``; every
   address is checked (see webhooks/network.py) and the connection goes to a checked address.
4. Record: one ``UPDATE ... FROM unnest(...)`` writes every outcome and, for failures, the
   next attempt's time from ``SERVICE_WEBHOOK_RETRY_DELAYS_MS``, or FAILED after the last.
   The same transaction keeps each endpoint's failure streak and disables an endpoint that
   answered 410 Gone or has failed every attempt for ``SERVICE_WEBHOOK_DISABLE_AFTER_SECONDS``
   (with a ``webhook_endpoint.disabled`` event).

The Celery task (webhooks/tasks.py) only claims and hands the batch over (``dispatch``): its
thread is free again at once, however slow the receivers; the batch is recorded by the
process's recorder thread when its last attempt ends, and the retries enqueued from there. If
a message is lost, the row still says when it is due and the sweep sends it.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, transaction

from accounts.tenancy import Tenant
from webhooks import sender
from webhooks.envelope import envelope_body
from webhooks.models import Endpoint, Event
from webhooks.network import IPAddress, Target, UrlRefused, checked_addresses, parse_url
from webhooks.services import event_record
from webhooks.signing import signature_header

logger = logging.getLogger(__name__)

USER_AGENT = "SERVICE-Webhooks/1.0"
# An attempt in flight keeps its lease this long past the timeout; only a worker that died
# mid-attempt lets a lease run out, and then the sweep sends the delivery again.
LEASE_MARGIN_SECONDS = 60


@dataclass(frozen=True)
class Claimed:
    id: str
    endpoint_id: str
    project_id: str
    attempts: int
    url: str
    secret: str
    # The secret a rotation replaced, while its overlap lasts: it signs beside ``secret``.
    previous_secret: str | None
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


# The replaced secret only until its overlap ends, by the database's clock (which every
# due time here uses too).
_CLAIM_COLUMNS = """
    d.id, e.id, e.project_id, d.attempts, e.url, e.secret,
    CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END,
    ev.id, ev.type, ev.created_at, ev.data, now()
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

# Overdue deliveries (a lost message, a backlog waiting its turn), at most ``per_project`` of
# each project per page, the oldest first, then the next turn of every project: a project
# with 100,000 waiting takes its share of a page, never the page. Each endpoint's oldest
# are read through delivery_endpoint_due (a few index entries per endpoint, whatever the
# backlog); the rows read beyond a project's share are only locked until this commits.
_CLAIM_OVERDUE = f"""
WITH candidates AS (
    SELECT d.id, e.project_id, d.next_attempt_at FROM webhooks_endpoint AS e
    CROSS JOIN LATERAL (
        SELECT id, next_attempt_at FROM webhooks_delivery
        WHERE endpoint_id = e.id AND status = 'PENDING'
          AND next_attempt_at <= now() - %(grace)s * interval '1 second'
          AND (leased_until IS NULL OR leased_until <= now())
        ORDER BY next_attempt_at
        LIMIT %(per_project)s
        FOR UPDATE SKIP LOCKED
    ) AS d
), due AS (
    SELECT id FROM (
        SELECT id, next_attempt_at,
            row_number() OVER (PARTITION BY project_id ORDER BY next_attempt_at) AS turn
        FROM candidates
    ) AS c
    WHERE turn <= %(per_project)s
    ORDER BY turn, next_attempt_at
    LIMIT %(limit)s
)
UPDATE webhooks_delivery AS d SET leased_until = now() + %(lease)s * interval '1 second'
FROM due, webhooks_endpoint AS e, webhooks_event AS ev
WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id
RETURNING {_CLAIM_COLUMNS}
"""

# One project's due deliveries, the oldest first, at most %(n)s (a step of its drain): each
# of its endpoints' oldest through delivery_endpoint_due, so a backlog of 100,000 costs a
# step n index entries per endpoint, not a scan.
_CLAIM_PROJECT_DUE = f"""
WITH due AS (
    SELECT d.id FROM webhooks_endpoint AS e
    CROSS JOIN LATERAL (
        SELECT id, next_attempt_at FROM webhooks_delivery
        WHERE endpoint_id = e.id AND status = 'PENDING' AND next_attempt_at <= now()
          AND (leased_until IS NULL OR leased_until <= now())
        ORDER BY next_attempt_at
        LIMIT %(n)s
        FOR UPDATE SKIP LOCKED
    ) AS d
    WHERE e.project_id = %(project)s
    ORDER BY d.next_attempt_at
    LIMIT %(n)s
)
UPDATE webhooks_delivery AS d SET leased_until = now() + %(lease)s * interval '1 second'
FROM due, webhooks_endpoint AS e, webhooks_event AS ev
WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id
RETURNING {_CLAIM_COLUMNS}
"""

_PROJECT_HAS_DUE = """
SELECT EXISTS (
    SELECT 1 FROM webhooks_endpoint AS e JOIN webhooks_delivery AS d ON d.endpoint_id = e.id
    WHERE e.project_id = %(project)s AND d.status = 'PENDING' AND d.next_attempt_at <= now()
      AND (d.leased_until IS NULL OR d.leased_until <= now())
)
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
        WHEN e.status = 'DISABLED' THEN 'FAILED'
        WHEN d.next_attempt_at > %(claimed)s THEN 'PENDING'
        WHEN d.attempts < cardinality(%(delays)s::int[]) THEN 'PENDING'
        ELSE 'FAILED' END,
    next_attempt_at = CASE
        WHEN v.ok THEN NULL
        WHEN e.status = 'DISABLED' THEN NULL
        WHEN d.next_attempt_at > %(claimed)s THEN d.next_attempt_at
        WHEN d.attempts < cardinality(%(delays)s::int[])
            THEN now() + (%(delays)s::int[])[d.attempts + 1] * interval '1 millisecond'
        ELSE NULL END
FROM unnest(%(ids)s::text[], %(oks)s::bool[], %(codes)s::int[], %(errors)s::text[])
    AS v(id, ok, code, error), webhooks_endpoint AS e
WHERE d.id = v.id AND e.id = d.endpoint_id
RETURNING d.id, d.status, d.next_attempt_at
"""

# Each endpoint's failure streak, before the outcomes are written (a delivery of an endpoint
# disabled here becomes FAILED there). Only rows that change are written: on the usual path
# (success after success) this statement writes nothing. ``now()`` is the transaction's
# start, the same in every row, which is how the RETURNING tells the endpoints disabled here.
_STREAK = """
WITH v AS (
    SELECT d.endpoint_id, bool_or(v.ok) AS any_ok, bool_or(v.code = 410) AS gone
    FROM unnest(%(ids)s::text[], %(oks)s::bool[], %(codes)s::int[]) AS v(id, ok, code)
    JOIN webhooks_delivery AS d ON d.id = v.id
    GROUP BY d.endpoint_id
), next AS (
    SELECT e.id,
        CASE WHEN v.any_ok AND NOT v.gone THEN NULL
             ELSE coalesce(e.failing_since, now()) END AS failing_since,
        coalesce(e.status = 'ACTIVE' AND (
            v.gone OR (NOT v.any_ok AND e.failing_since <= now() - %(after)s * interval '1 second')
        ), false) AS disable,
        CASE WHEN v.gone THEN 'GONE' ELSE 'FAILING' END AS reason
    FROM webhooks_endpoint AS e JOIN v ON v.endpoint_id = e.id
)
UPDATE webhooks_endpoint AS e SET
    failing_since = next.failing_since,
    status = CASE WHEN next.disable THEN 'DISABLED' ELSE e.status END,
    disabled_at = CASE WHEN next.disable THEN now() ELSE e.disabled_at END,
    disabled_reason = CASE WHEN next.disable THEN next.reason ELSE e.disabled_reason END
FROM next
WHERE e.id = next.id
  AND (next.disable OR e.failing_since IS DISTINCT FROM next.failing_since)
RETURNING e.id, next.disable
"""

# The other deliveries still waiting for an endpoint disabled just now: FAILED (they can be
# redelivered once it is re-enabled). One in flight becomes FAILED when its outcome is written.
_FAIL_WAITING = """
UPDATE webhooks_delivery SET status = 'FAILED', next_attempt_at = NULL,
    last_error = coalesce(last_error, 'The endpoint was disabled.')
WHERE endpoint_id = ANY(%(endpoints)s) AND status = 'PENDING'
  AND (leased_until IS NULL OR leased_until <= now())
"""

# A row admitted by no slot: back to waiting, due a little later; not an attempt.
_DEFER = """
UPDATE webhooks_delivery SET leased_until = NULL,
    next_attempt_at = greatest(next_attempt_at, now() + %(defer)s * interval '1 millisecond')
WHERE id = ANY(%(ids)s) AND status = 'PENDING'
RETURNING id, next_attempt_at
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
    return _claim(
        _CLAIM_OVERDUE, {"grace": grace, "limit": limit, "per_project": drain_step_size()}
    )


def drain_step_size() -> int:
    """Rows a project's drain claims per step: its sending slots and as many waiting, so its
    slots stay busy while the next step is claimed, and none of a step is deferred."""
    return 2 * int(settings.SERVICE_WEBHOOK_PROJECT_CONCURRENCY)


def claim_project_due(project_id: str) -> list[Claimed]:
    return _claim(_CLAIM_PROJECT_DUE, {"project": project_id, "n": drain_step_size()})


def project_has_due(project_id: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_PROJECT_HAS_DUE, {"project": project_id})
        return bool(cursor.fetchone()[0])


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
    """The per-process thread pool that sends the requests.

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


class Slots:
    """Attempts in flight in this process: in all, per project and per destination host.

    An attempt whose project, host and process all have a free slot starts at once. One that
    does not waits in this process's line (started, in order, as slots free up: with a fast
    receiver, within milliseconds), unless its project already has
    ``WAIT_PER_SLOT`` times its cap waiting; then it is deferred (put back in the table, due a
    moment later, not an attempt). So a project whose receiver hangs holds its few slots and
    a bounded line, never a sending thread or a Celery thread of anyone else, and the thread
    pool's own queue stays empty (every started attempt has a thread).
    """

    WAIT_PER_SLOT = 4

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.total = 0
        self.projects: Counter[str] = Counter()
        self.hosts: Counter[str] = Counter()
        self.waiting: deque[tuple[str, str, Callable[[], object]]] = deque()
        self.waiting_by_project: Counter[str] = Counter()

    def _free(self, project: str, host: str) -> bool:
        return (
            self.total < int(settings.SERVICE_WEBHOOK_CONCURRENCY)
            and self.projects[project] < int(settings.SERVICE_WEBHOOK_PROJECT_CONCURRENCY)
            and self.hosts[host] < int(settings.SERVICE_WEBHOOK_HOST_CONCURRENCY)
        )

    def _take(self, project: str, host: str) -> None:
        self.total += 1
        self.projects[project] += 1
        self.hosts[host] += 1

    def admit(self, project: str, host: str, start: Callable[[], object]) -> bool:
        """Start now, or line up to start later: True; or neither (defer it): False."""
        with self.lock:
            if self._free(project, host):
                self._take(project, host)
            else:
                limit = self.WAIT_PER_SLOT * int(settings.SERVICE_WEBHOOK_PROJECT_CONCURRENCY)
                if self.waiting_by_project[project] >= limit:
                    return False
                self.waiting.append((project, host, start))
                self.waiting_by_project[project] += 1
                return True
        start()
        return True

    def give(self, project: str, host: str) -> None:
        """An attempt ended: free its slots and start whoever waits and now fits."""
        ready: list[Callable[[], object]] = []
        with self.lock:
            self.total -= 1
            for counter, key in ((self.projects, project), (self.hosts, host)):
                counter[key] -= 1
                if counter[key] <= 0:
                    del counter[key]
            if self.waiting:
                still: deque[tuple[str, str, Callable[[], object]]] = deque()
                for entry in self.waiting:
                    if self._free(entry[0], entry[1]):
                        self._take(entry[0], entry[1])
                        self.waiting_by_project[entry[0]] -= 1
                        if self.waiting_by_project[entry[0]] <= 0:
                            del self.waiting_by_project[entry[0]]
                        ready.append(entry[2])
                    else:
                        still.append(entry)
                self.waiting = still
        for start in ready:
            start()


_slots: Slots | None = None


def slots() -> Slots:
    global _slots
    with _executor_lock:
        if _slots is None or _slots.pid != os.getpid():
            _slots = Slots()
        return _slots


def post(
    target: Target, addresses: Sequence[IPAddress], body: bytes, secret: str, *older: str
) -> Outcome:
    """One attempt: POST the body, signed with ``secret`` (and the ``older`` ones of a
    rotation's overlap); a 2xx within the timeout is the only success."""
    headers = {
        "Host": target.host_header,
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "SERVICE-Signature": signature_header(secret, int(time.time()), body, *older),
    }
    result = sender.post(
        target,
        addresses,
        (target.request_path, body, headers),
        timeout=float(settings.SERVICE_WEBHOOK_TIMEOUT_SECONDS),
        pool=sender.connections(int(settings.SERVICE_WEBHOOK_CONCURRENCY)),
    )
    return Outcome("", result.ok, result.status, result.error)


RetryHandler = Callable[[list["Retry"]], None]


@dataclass
class _Batch:
    """One claim's admitted rows, until the last attempt ends and the outcomes are written."""

    claimed_at: datetime
    expected: int
    on_retries: RetryHandler | None
    # Recorded by the caller (process) rather than the recorder thread.
    record_in_caller: bool = False
    # Called once every outcome is written (or at once when nothing was admitted): a drain's
    # next step.
    on_recorded: Callable[[], None] | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    lookups: dict[tuple[str, int], Future[list[IPAddress]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ready: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    retries: list[Retry] = field(default_factory=list)

    def addresses(self, target: Target) -> list[IPAddress]:
        """Resolve each host once per batch, on the first sending thread that needs it."""
        key = (target.host, target.port)
        with self.lock:
            future = self.lookups.get(key)
            mine = future is None
            if future is None:
                future = self.lookups[key] = Future()
        if mine:
            try:
                future.set_result(checked_addresses(target))
            except UrlRefused as exc:
                future.set_exception(exc)
        return future.result()

    def add(self, outcome: Outcome) -> bool:
        """Keep one outcome; whether it was the batch's last."""
        with self.lock:
            self.outcomes.append(outcome)
            return len(self.outcomes) == self.expected


def _attempt(item: Claimed, target: Target | str, body: bytes, batch: _Batch) -> Outcome:
    if isinstance(target, str):
        return Outcome(item.id, False, None, sender.shorten(f"Refused: {target}"))
    try:
        addresses = batch.addresses(target)
    except UrlRefused as exc:
        return Outcome(item.id, False, None, sender.shorten(f"Refused: {exc}"))
    try:
        older = (item.previous_secret,) if item.previous_secret else ()
        outcome = post(target, addresses, body, item.secret, *older)
    except Exception as exc:  # a bug must cost one attempt, never the batch's outcomes
        logger.exception("webhook delivery %s: unexpected error", item.id)
        outcome = Outcome("", False, None, sender.shorten(f"Internal error: {type(exc).__name__}"))
    return Outcome(item.id, outcome.ok, outcome.status, outcome.error)


def _targets(claimed: Sequence[Claimed]) -> tuple[dict[str, bytes], dict[str, Target | str]]:
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
    return bodies, targets


def dispatch(
    claimed: Sequence[Claimed],
    on_retries: RetryHandler | None = None,
    *,
    record_in_caller: bool = False,
    on_recorded: Callable[[], None] | None = None,
) -> _Batch:
    """Admit, defer and start the attempts of one claim; return at once.

    The outcomes are written when the batch's last attempt ends (by the recorder thread, or
    by the caller when ``record_in_caller``: ``done`` is then set when the attempts end), and
    ``on_retries`` gets the retries to schedule; deferred rows are handed to it at once.
    """
    bodies, targets = _targets(claimed)
    deferred: list[str] = []
    held = slots()
    # All rows of one claim share its timestamp (one statement's now()). ``expected`` is set
    # once every row is admitted or deferred; an attempt that ends before then waits for it.
    batch = _Batch(
        claimed_at=min(item.claimed_at for item in claimed),
        expected=0,
        on_retries=on_retries,
        record_in_caller=record_in_caller,
        on_recorded=on_recorded,
    )
    accepted = 0
    for item in claimed:
        target = targets[item.url]
        host = target.host if isinstance(target, Target) else ""

        def run(item: Claimed = item, target: Target | str = target, host: str = host) -> None:
            try:
                outcome = _attempt(item, target, bodies[item.event_id], batch)
            finally:
                held.give(item.project_id, host)
            batch.ready.wait()
            if batch.add(outcome):
                if batch.record_in_caller:
                    batch.done.set()
                else:
                    recorder().put(batch)

        def start(run: Callable[[], None] = run) -> None:
            executor().submit(run)

        if held.admit(item.project_id, host, start):
            accepted += 1
        else:
            deferred.append(item.id)
    batch.expected = accepted
    batch.ready.set()
    if deferred:
        retries = defer(deferred)
        if on_retries is not None:
            on_retries(retries)
        batch.retries.extend(retries)
    if not accepted:
        batch.done.set()
        if on_recorded is not None:
            on_recorded()
    return batch


def send_all(claimed: Sequence[Claimed]) -> list[Outcome]:
    """Every claimed delivery, concurrently, without the slots; one outcome each, in order.

    For a caller that already holds the rows and must have every outcome (a test, a tool).
    """
    bodies, targets = _targets(claimed)
    batch = _Batch(claimed_at=datetime.now(), expected=len(claimed), on_retries=None)

    def attempt(item: Claimed) -> Outcome:
        return _attempt(item, targets[item.url], bodies[item.event_id], batch)

    if len(claimed) == 1:
        return [attempt(claimed[0])]
    return list(executor().map(attempt, claimed))


# --- Recording --------------------------------------------------------------------------------


class _Recorder:
    """The one thread per process that writes finished batches (one database connection,
    however many sending threads), and schedules their retries."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.queue: queue.SimpleQueue[_Batch] = queue.SimpleQueue()
        threading.Thread(target=self.run, name="webhook-recorder", daemon=True).start()

    def put(self, batch: _Batch) -> None:
        self.queue.put(batch)

    def run(self) -> None:
        while True:
            batch = self.queue.get()
            try:
                close_old_connections()  # a connection the database dropped is replaced
                batch.retries.extend(record(batch.outcomes, batch.claimed_at))
                if batch.on_retries is not None:
                    batch.on_retries(batch.retries)
            except Exception:
                # The rows keep their leases; when those run out, the sweep sends them again.
                logger.exception("webhook outcomes could not be recorded")
            finally:
                batch.done.set()
                if batch.on_recorded is not None:
                    try:
                        batch.on_recorded()
                    except Exception:
                        logger.exception("webhook batch: the next step could not be sent")


_recorder: _Recorder | None = None


def recorder() -> _Recorder:
    global _recorder
    with _executor_lock:
        if _recorder is None or _recorder.pid != os.getpid():
            _recorder = _Recorder()
        return _recorder


def defer(ids: Sequence[str]) -> list[Retry]:
    """Put rows back, unleased and due a moment later (no attempt was made)."""
    rows = _write(_DEFER, {"ids": list(ids), "defer": int(settings.SERVICE_WEBHOOK_DEFER_MS)})
    due: dict[datetime, list[str]] = defaultdict(list)
    for delivery_id, next_attempt_at in rows:
        due[next_attempt_at].append(delivery_id)
    return [Retry(ids=ids, at=at) for at, ids in sorted(due.items())]


def record(outcomes: Sequence[Outcome], claimed_at: datetime) -> list[Retry]:
    """Write every outcome and the endpoints' failure streaks in one transaction; disable the
    endpoints that must be; return the retries to schedule, by due time."""
    if not outcomes:
        return []
    params: dict[str, Any] = {
        "ids": [o.id for o in outcomes],
        "oks": [o.ok for o in outcomes],
        "codes": [o.status for o in outcomes],
        "errors": [o.error for o in outcomes],
        "claimed": claimed_at,
        "delays": list(settings.SERVICE_WEBHOOK_RETRY_DELAYS_MS),
        "after": int(settings.SERVICE_WEBHOOK_DISABLE_AFTER_SECONDS),
    }
    with transaction.atomic(), connection.cursor() as cursor:
        # At least once already: see _write.
        cursor.execute("SET LOCAL synchronous_commit TO OFF")
        cursor.execute(_STREAK, params)
        disabled = [endpoint_id for endpoint_id, disable in cursor.fetchall() if disable]
        cursor.execute(_RECORD, params)
        rows = cursor.fetchall()
        if disabled:
            cursor.execute(_FAIL_WAITING, {"endpoints": disabled})
            _announce_disabled(disabled)
    due: dict[datetime, list[str]] = defaultdict(list)
    for delivery_id, status, next_attempt_at in rows:
        if status == "PENDING" and next_attempt_at is not None:
            due[next_attempt_at].append(delivery_id)
    return [Retry(ids=ids, at=at) for at, ids in sorted(due.items())]


def _announce_disabled(endpoint_ids: Sequence[str]) -> None:
    """A ``webhook_endpoint.disabled`` event per endpoint disabled just now (to the project's
    other endpoints: a disabled one receives nothing), in the transaction that disabled it."""
    for endpoint in Endpoint.objects.select_related("project").filter(id__in=endpoint_ids):
        logger.warning("webhook endpoint %s disabled (%s)", endpoint.id, endpoint.disabled_reason)
        event_record(
            tenant=Tenant.of(endpoint),  # to the endpoints of its own mode
            type=Event.Type.WEBHOOK_ENDPOINT_DISABLED,
            data={
                "webhookId": endpoint.id,
                "url": endpoint.url,
                "reason": endpoint.disabled_reason,
                "disabledAt": endpoint.disabled_at.isoformat() if endpoint.disabled_at else None,
            },
        )


def process(claimed: Sequence[Claimed]) -> list[Retry]:
    """Send a claim and wait for its outcomes to be written; the retries to schedule
    (deferred rows among them)."""
    if not claimed:
        return []
    batch = dispatch(claimed, record_in_caller=True)
    batch.done.wait()
    retries = batch.retries + record(batch.outcomes, batch.claimed_at)
    return sorted(retries, key=lambda retry: retry.at)


def deliver(ids: Iterable[str]) -> list[Retry]:
    """Attempt those of these deliveries that are due now, and wait for the outcomes."""
    return process(claim_by_id(list(ids)))


def deliver_later(ids: Iterable[str], on_retries: RetryHandler) -> int:
    """The task's way: claim, start the attempts, return at once (how many were claimed)."""
    claimed = claim_by_id(list(ids))
    if claimed:
        dispatch(claimed, on_retries)
    return len(claimed)


def drain_step(project_id: str, on_retries: RetryHandler, on_recorded: Callable[[], None]) -> int:
    """One step of a project's drain: claim its oldest due deliveries (``drain_step_size``),
    start them, return at once; ``on_recorded`` runs once their outcomes are written (the
    next step). How many were claimed: none ends the drain."""
    claimed = claim_project_due(project_id)
    if claimed:
        dispatch(claimed, on_retries, on_recorded=on_recorded)
    return len(claimed)


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
