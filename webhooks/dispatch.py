"""Dispatch: admit a claim's rows, send them on the sending threads, hand the outcomes on.

Every admitted request runs on the process's sending pool (a ``ThreadPoolExecutor`` of
``SERVICE_WEBHOOK_CONCURRENCY`` threads), over keep-alive connections (webhooks/sender.py).
Each host is resolved once per batch, on the sending thread, within
``SERVICE_WEBHOOK_RESOLVE_TIMEOUT_SECONDS``; every address is checked (webhooks/network.py) and
the connection goes to a checked address. When a batch's last attempt ends, its outcomes are
written by the process's recording thread (a one-thread executor: one database connection,
however many sending threads), and its retries handed to the caller's ``on_retries``.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections

from events.envelope import envelope_body
from webhooks import sender
from webhooks.admission import slots
from webhooks.claims import Claimed
from webhooks.network import IPAddress, Target, UrlRefused, checked_addresses, parse_url
from webhooks.outcomes import Outcome, Retry, defer, record
from webhooks.signing import signature_header

logger = logging.getLogger(__name__)

USER_AGENT = "SERVICE-Webhooks/1.0"

RetryHandler = Callable[[list[Retry]], None]


@functools.cache
def sending_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(
        max_workers=int(settings.SERVICE_WEBHOOK_CONCURRENCY), thread_name_prefix="webhook-send"
    )


@functools.cache
def recording_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="webhook-record")


# Threads do not survive a fork (Celery's prefork pool): a child makes its own pools.
os.register_at_fork(after_in_child=sending_pool.cache_clear)
os.register_at_fork(after_in_child=recording_pool.cache_clear)


def post(
    target: Target, addresses: Sequence[IPAddress], body: bytes, secret: str, *older: str
) -> sender.Result:
    """One attempt: POST the body, signed with ``secret`` (and the ``older`` ones of a
    rotation's overlap); a 2xx within the timeout is the only success."""
    headers = {
        "Host": target.host_header,
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "SERVICE-Signature": signature_header(secret, int(time.time()), body, *older),
    }
    timeout = float(settings.SERVICE_WEBHOOK_TIMEOUT_SECONDS)
    return sender.post(target, addresses, target.request_path, body, headers, timeout=timeout)


@dataclass
class Batch:
    """One claim's admitted rows, until the last attempt ends and the outcomes are written."""

    claimed_at: datetime
    expected: int
    on_retries: RetryHandler | None
    # Recorded by the caller (delivery.process) rather than the recording thread.
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


def _attempt(item: Claimed, target: Target | str, body: bytes, batch: Batch) -> Outcome:
    if isinstance(target, str):
        return Outcome(item.id, False, None, sender.shorten(f"Refused: {target}"))
    try:
        addresses = batch.addresses(target)
    except UrlRefused as exc:
        return Outcome(item.id, False, None, sender.shorten(f"Refused: {exc}"))
    try:
        older = (item.previous_secret,) if item.previous_secret else ()
        result = post(target, addresses, body, item.secret, *older)
    except Exception as exc:  # a bug must cost one attempt, never the batch's outcomes
        logger.exception("webhook delivery %s: unexpected error", item.id)
        error = sender.shorten(f"Internal error: {type(exc).__name__}")
        return Outcome(item.id, False, None, error)
    return Outcome(item.id, result.ok, result.status, result.error)


def _targets(claimed: Sequence[Claimed]) -> tuple[dict[str, bytes], dict[str, Target | str]]:
    bodies: dict[str, bytes] = {}
    targets: dict[str, Target | str] = {}
    for item in claimed:
        if item.event_id not in bodies:
            bodies[item.event_id] = envelope_body(item.event())
        if item.url not in targets:
            try:
                targets[item.url] = parse_url(item.url)
            except UrlRefused as exc:
                targets[item.url] = str(exc)
    return bodies, targets


def _record(batch: Batch) -> None:
    """On the recording thread: write a finished batch, hand its retries on."""
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


def dispatch(
    claimed: Sequence[Claimed],
    on_retries: RetryHandler | None = None,
    *,
    record_in_caller: bool = False,
    on_recorded: Callable[[], None] | None = None,
) -> Batch:
    """Admit, defer and start the attempts of one claim; return at once.

    The outcomes are written when the batch's last attempt ends (by the recording thread, or
    by the caller when ``record_in_caller``: ``done`` is then set when the attempts end), and
    ``on_retries`` gets the retries to schedule; deferred rows are handed to it at once.
    """
    bodies, targets = _targets(claimed)
    deferred: list[str] = []
    held = slots()
    # All rows of one claim share its timestamp (one statement's now()). ``expected`` is set
    # once every row is admitted or deferred; an attempt that ends before then waits for it.
    batch = Batch(
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
                    recording_pool().submit(_record, batch)

        def start(run: Callable[[], None] = run) -> None:
            sending_pool().submit(run)

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
