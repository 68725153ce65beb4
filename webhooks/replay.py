"""Replaying an endpoint's events: ``POST /v1/webhooks/<id>/replay``.

A replay makes a new delivery, due at once, for every retained event of the endpoint's
tenant in the window that its subscription matches, whether or not it was delivered before.
Its deliveries are ordinary ones: sent, retried, signed and recorded as any other, and
counted against the same per-project caps (webhooks/admission.py, ``Slots``).

What keeps a replay of a million events from flooding anything: its deliveries are made in
batches of ``SERVICE_WEBHOOK_REPLAY_BATCH`` rows (one set-based ``INSERT ... SELECT``, a
keyset step through the events' ``event_project_created_id`` index), and a batch is made
only once fewer than half a batch of the endpoint's deliveries still wait for their first
attempt. So the table holds at most about a batch of the replay's rows waiting; they are
sent by the project's drain (webhooks/services.py), as a job's are, so the webhook queue holds
at most one message of them at a time and another project's live deliveries never queue
behind them. The replay's row (``Replay``) says where the next batch starts; the delivery sweep
resumes a replay whose message was lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, DateTimeField, ExpressionWrapper, Q
from django.db.models.functions import Now
from django.utils import timezone

from accounts.tenancy import Tenant
from storage_service.celery import app
from storage_service.errors import ValidationError
from storage_service.ids import new_id
from webhooks.models import Endpoint, Replay
from webhooks.selectors import endpoint_get
from webhooks.services import drain_start

logger = logging.getLogger(__name__)

# The matching events of a replay after its last batch, oldest first: the window, the
# endpoint's types, then (created_at, id) past the batch's end, as one index range condition.
_MATCHING = """
FROM webhooks_event AS ev
WHERE ev.project_id = %(project)s AND ev.mode = %(mode)s
  AND ev.created_at >= %(since)s AND ev.created_at < %(until)s
  AND (%(types)s::text[] IS NULL OR ev.type = ANY(%(types)s::text[]))
"""

_COUNT = f"SELECT count(*) {_MATCHING}"

_BATCH = f"""
WITH picked AS (
    SELECT ev.id, ev.created_at {_MATCHING}
      AND (ev.created_at, ev.id) > (%(after_at)s, %(after_id)s)
    ORDER BY ev.created_at, ev.id
    LIMIT %(n)s
), made AS (
    INSERT INTO webhooks_delivery
        (id, endpoint_id, event_id, status, attempts, created_at, next_attempt_at)
    SELECT (%(ids)s::text[])[p.n], %(endpoint)s, p.id, 'PENDING', 0, now(), now()
    FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM picked) AS p
    RETURNING id
), last AS (
    SELECT created_at, id FROM picked ORDER BY created_at DESC, id DESC LIMIT 1
)
SELECT ARRAY(SELECT id FROM made), (SELECT created_at FROM last), (SELECT id FROM last)
"""

# The endpoint's deliveries still waiting for a first attempt (through delivery_endpoint_due),
# counted up to the threshold that matters.
_WAITING = """
SELECT count(*) FROM (
    SELECT 1 FROM webhooks_delivery
    WHERE endpoint_id = %(endpoint)s AND status = 'PENDING' AND attempts = 0
    LIMIT %(n)s
) AS waiting
"""


def batch_size() -> int:
    return int(settings.SERVICE_WEBHOOK_REPLAY_BATCH)


@dataclass(frozen=True)
class Step:
    """What one step of a replay did: the deliveries it made (to send now), and whether the
    replay goes on (then its next step is due in ``SERVICE_WEBHOOK_REPLAY_POLL_MS``)."""

    made: list[str]
    more: bool


def check_window(*, since: datetime, until: datetime | None, now: datetime) -> datetime:
    """The window's end (now when not given), or 400 ``VALIDATION_ERROR``: both ends within
    the event retention window (``SERVICE_EVENT_RETENTION_DAYS``), ``until`` after
    ``since`` and not in the future."""
    days = int(settings.SERVICE_EVENT_RETENTION_DAYS)
    oldest = now - timedelta(days=days)
    end = now if until is None else until
    problems: dict[str, list[str]] = {}
    if since < oldest:
        problems["since"] = [f"Must be within the last {days} days (events are kept {days} days)."]
    elif since > now:
        problems["since"] = ["Must not be in the future."]
    if until is not None and until > now:
        problems["until"] = ["Must not be in the future."]
    elif end <= since:
        problems["until"] = ["Must be later than since."]
    if problems:
        raise ValidationError("The replay window is invalid.", details=problems)
    return end


def endpoint_replay(
    *, tenant: Tenant, webhook_id: str, since: datetime, until: datetime | None
) -> int:
    """Replay the endpoint's events of ``[since, until)``; the number of deliveries it makes.

    1. Check the window (``check_window``) and find the endpoint (404 for another tenant's).
    2. Count the matching events: the answer's count. (An event that passes the retention
       window before its batch is made is skipped.)
    3. In one transaction: the ``Replay`` row and its first batch of deliveries, due now.
    4. After commit: a message sends that batch, and one makes the next batch.
    """
    now = timezone.now()
    end = check_window(since=since, until=until, now=now)
    endpoint = endpoint_get(tenant=tenant, webhook_id=webhook_id)
    types = list(endpoint.events) if endpoint.events is not None else None
    params = _params(endpoint, since=since, until=end, types=types)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_COUNT, params)
            total = int(cursor.fetchone()[0])
        if total == 0:
            return 0
        replay = Replay.objects.create(
            endpoint=endpoint, since=since, until=end, types=types, total=total, stepped_at=Now()
        )
        step = _make_batch(replay)
        _send_on_commit(replay.id, endpoint.project_id, step)
    return total


def replay_continue(*, replay_id: int) -> Step:
    """One step of a replay (its task, and the sweep's): make the next batch if the endpoint
    has fewer than half a batch waiting for a first attempt, else nothing yet.

    The replay's row is locked (``SKIP LOCKED``: a step already running for it makes this one
    return) and its position advanced in the transaction that makes the batch, so two steps
    never make the same deliveries.
    """
    with transaction.atomic():
        replay = (
            Replay.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("endpoint")
            .filter(id=replay_id, finished_at__isnull=True)
            .annotate(recent=_stepped_since(_poll() / 2))
            .first()
        )
        if replay is None or replay.recent:
            return Step(made=[], more=False)  # done, or another chain of steps is alive
        Replay.objects.filter(id=replay.id).update(stepped_at=Now())
        with connection.cursor() as cursor:
            cursor.execute(_WAITING, {"endpoint": replay.endpoint_id, "n": batch_size() // 2})
            waiting = int(cursor.fetchone()[0])
        # Enough still waiting: look again after the poll interval.
        step = Step(made=[], more=True) if waiting >= batch_size() // 2 else _make_batch(replay)
        _send_on_commit(replay.id, replay.endpoint.project_id, step)
    return step


def replays_stalled(*, limit: int = 100) -> list[int]:
    """Unfinished replays whose steps stopped (no step for the sweep's grace and a poll
    interval: a lost message), oldest first, for the sweep to resume."""
    grace = timedelta(seconds=int(settings.SERVICE_WEBHOOK_SWEEP_GRACE_SECONDS)) + _poll()
    return list(
        Replay.objects.filter(finished_at__isnull=True)
        .annotate(recent=_stepped_since(grace))
        .filter(recent=False)
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )


def _poll() -> timedelta:
    return timedelta(milliseconds=int(settings.SERVICE_WEBHOOK_REPLAY_POLL_MS))


def _stepped_since(ago: timedelta) -> ExpressionWrapper:
    """Whether a step ran less than ``ago`` before the database's now."""
    return ExpressionWrapper(
        Q(stepped_at__gt=ExpressionWrapper(Now() - ago, output_field=DateTimeField())),
        output_field=BooleanField(),
    )


def _params(
    endpoint: Endpoint, *, since: datetime, until: datetime, types: list[str] | None
) -> dict[str, Any]:
    return {
        "project": endpoint.project_id,
        "mode": endpoint.mode,
        "since": since,
        "until": until,
        "types": types,
        "endpoint": endpoint.id,
    }


def _make_batch(replay: Replay) -> Step:
    """The next batch of the replay's deliveries, and its position moved past them (inside
    the caller's transaction, with the replay's row locked or just made)."""
    size = batch_size()
    params = {
        **_params(replay.endpoint, since=replay.since, until=replay.until, types=replay.types),
        "after_at": replay.after_created_at or replay.since,
        "after_id": replay.after_event_id,
        "n": size,
        "ids": [new_id("dl") for _ in range(size)],  # one per event the batch may pick
    }
    with connection.cursor() as cursor:
        cursor.execute(_BATCH, params)
        made, last_at, last_id = cursor.fetchone()
    made = list(made or [])
    more = len(made) == size
    Replay.objects.filter(id=replay.id).update(
        made=replay.made + len(made),
        after_created_at=last_at if last_at is not None else replay.after_created_at,
        after_event_id=last_id if last_id is not None else replay.after_event_id,
        finished_at=None if more else timezone.now(),
    )
    return Step(made=made, more=more)


def _send_on_commit(replay_id: int, project_id: str, step: Step) -> None:
    """After commit: the project's drain sends the batch (as it sends a job's fan-out: never
    ahead of other projects' live deliveries), and a message makes the replay's next step
    (by task name, as webhooks/services.py sends its own); a lost message is the sweep's to
    redo."""

    def send() -> None:
        if step.made:
            drain_start(project_id)
        if step.more:
            poll = int(settings.SERVICE_WEBHOOK_REPLAY_POLL_MS) / 1000
            try:
                app.send_task(STEP_TASK, args=(replay_id,), countdown=poll, retry=False)
            except Exception:
                logger.warning("could not send replay %d's next step; the sweep will", replay_id)

    transaction.on_commit(send)


STEP_TASK = "webhooks.tasks.replay_step"
