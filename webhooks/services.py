"""Every change of the webhooks app: events and their fan-out, endpoints, redelivery."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import DateTimeField, ExpressionWrapper
from django.db.models.functions import Now
from django.utils import timezone

from accounts.models import Project
from accounts.tenancy import Tenant
from storage_service.celery import app
from storage_service.errors import (
    DeliveryAlreadyDelivered,
    DeliveryNotFound,
    ValidationError,
    WebhookLimitReached,
    WebhookNotFound,
)
from storage_service.ids import first_id_at, looks_like_id, new_id
from webhooks.models import Delivery, Endpoint, Event
from webhooks.network import UrlRefused, validate_webhook_url
from webhooks.selectors import endpoint_get
from webhooks.signing import new_secret

logger = logging.getLogger(__name__)

# Sent by name: the task (webhooks/tasks.py) runs webhooks/delivery.py, which records events
# through this module, so this module never imports either.
DELIVER_TASK = "webhooks.tasks.deliver"
DRAIN_TASK = "webhooks.tasks.drain_project"
# Per project *and* mode: test and live endpoints are separate data, each mode its own 20.
MAX_ENDPOINTS_PER_PROJECT = 20
EVENT_TYPES: tuple[str, ...] = tuple(Event.Type.values)


# Every API change that records an event pays for this, so it is one round trip when no
# endpoint is subscribed (most events): the event row, and the subscribed endpoints found in
# the same statement. A delivery per endpoint found is then inserted by a second statement,
# its id made by new_id as every id is. The first attempt is due at the database's now(), the
# clock every due-time comparison uses, so an API host's clock cannot delay it.
_RECORD_SQL = """
WITH event AS (
    INSERT INTO webhooks_event (id, project_id, mode, type, data, created_at)
    VALUES (%s, %s, %s, %s, %s::jsonb, %s)
)
SELECT ARRAY(
    SELECT e.id FROM webhooks_endpoint AS e
    WHERE e.project_id = %s AND e.mode = %s AND e.status = 'ACTIVE'
      AND (e.events IS NULL OR %s = ANY(e.events))
    ORDER BY e.id
)
"""

# The deliveries of events (ids made here, by new_id): one row per (id, endpoint, event) of
# the three arrays. An endpoint deleted since it was found is skipped, not an error.
_DELIVERIES_SQL = """
INSERT INTO webhooks_delivery
    (id, endpoint_id, event_id, status, attempts, created_at, next_attempt_at)
SELECT d.id, d.endpoint_id, d.event_id, 'PENDING', 0, %s, now()
FROM unnest(%s::text[], %s::text[], %s::text[]) AS d(id, endpoint_id, event_id)
WHERE EXISTS (SELECT 1 FROM webhooks_endpoint AS e WHERE e.id = d.endpoint_id)
"""


def _deliveries_insert(
    cursor: Any, *, events: Sequence[str], endpoints: Sequence[str], now: datetime
) -> list[str]:
    """A PENDING delivery, due now, of each event to each endpoint; their ids, in order."""
    pairs = [(event_id, endpoint_id) for event_id in events for endpoint_id in endpoints]
    ids = [new_id("dl") for _ in pairs]
    cursor.execute(
        _DELIVERIES_SQL,
        [now, ids, [endpoint for _, endpoint in pairs], [event for event, _ in pairs]],
    )
    return ids


def enqueue(ids: Sequence[str], *, eta: datetime | None = None) -> None:
    """Ask the webhook worker to attempt these deliveries (at ``eta``, else now). Never
    raises: the rows say what is due, and the sweep sends what a lost message would have."""
    try:
        app.send_task(DELIVER_TASK, args=(list(ids),), eta=eta, retry=False)
    except Exception:
        logger.warning("could not enqueue %d webhook deliveries; the sweep will", len(ids))


# --- Draining a project's backlog -------------------------------------------------------------
#
# Deliveries made in bulk (a job's thousands of events) are not each named in a message on
# the webhook queue: 100,000 ids in messages would sit ahead of every other project's live
# deliveries there, and the per-project caps limit what is in flight, not queue position.
# Their rows are made due and one chain of steps per project sends them (webhooks/delivery.py
# drain_step): each step claims that project's oldest due rows, a few slots' worth, and the
# next step is sent once their outcomes are written. So the queue holds at most one message
# of the project's backlog at a time, and any other project's message waits behind it only.
# The chain is held by a cache key (set if absent): many batches asking at once start one.


def _drain_key(project_id: str) -> str:
    return f"webhooks:drain:{project_id}"


def _drain_hold_seconds() -> int:
    # A step's attempts may take the whole timeout; a chain whose worker died is started
    # again after this (or its rows are sent by the sweep meanwhile).
    return int(settings.SERVICE_WEBHOOK_TIMEOUT_SECONDS) + 60


def drain_start(project_id: str) -> None:
    """Make sure a chain sends the project's due deliveries: start one unless one runs.
    Never raises (the sweep sends what is overdue)."""
    try:
        if cache.add(_drain_key(project_id), 1, timeout=_drain_hold_seconds()):
            app.send_task(DRAIN_TASK, args=(project_id,), retry=False)
    except Exception:
        logger.warning("could not start the webhook drain of %s; the sweep will", project_id)


def drain_continue(project_id: str) -> None:
    """The chain's next step (it still holds its key)."""
    try:
        cache.touch(_drain_key(project_id), timeout=_drain_hold_seconds())
        app.send_task(DRAIN_TASK, args=(project_id,), retry=False)
    except Exception:
        logger.warning("could not continue the webhook drain of %s; the sweep will", project_id)


def drain_end(project_id: str, *, has_due: Callable[[], bool]) -> None:
    """A step found nothing due: give the chain up. Rows committed after that step's claim
    (whose drain_start found the key held) are looked for after the key is gone, so either
    this finds them or their own drain_start does."""
    try:
        cache.delete(_drain_key(project_id))
    except Exception:
        logger.warning("could not end the webhook drain of %s", project_id)
        return
    if has_due():
        drain_start(project_id)


@dataclass(frozen=True)
class ChangeSql:
    """A change written in the same statement that reads its events' data.

    ``ctes``: data-modifying CTEs (``name AS (INSERT ...), ``, each followed by a comma and
    a space) with positional ``%s`` parameters ``params``; PostgreSQL runs each exactly once
    and to completion, whatever the rest of the statement reads. ``returning``: SQL
    expressions over those CTEs (``(SELECT id FROM name)``) whose values the caller gets back.
    """

    ctes: str
    params: list[Any]
    returning: tuple[str, ...] = ()


def event_record(
    *, tenant: Tenant, type: str, data: dict[str, Any], at: datetime | None = None
) -> Event:
    """Write an event row inside the caller's transaction (the outbox), and its deliveries.

    ``data`` always starts with ``projectId`` and ``organizationId``; the caller adds the ids
    of the resources concerned and the fields the event is about.

    1. The event row.
    2. One PENDING delivery, due now, per endpoint of the tenant (its project *and* mode)
       subscribed to the type, in the same transaction: the event and its deliveries commit
       (or vanish) together. A test-mode event never reaches a live endpoint.
    3. After commit, one message asks a worker to send them all; if it is lost, the sweep
       finds the rows due and sends them.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events must be recorded inside the transaction of their change")
    recorded = _record(tenant=tenant, type=type, data=data, at=at)
    event = Event(
        id=recorded.id,
        **tenant.owner(),
        type=type,
        data=recorded.payload,
        created_at=recorded.created_at,
    )
    event._state.adding, event._state.db = False, recorded.db_alias
    return event


class _Recorded(NamedTuple):
    """What an event row was written with."""

    id: str
    payload: dict[str, Any]
    created_at: datetime
    db_alias: str


def _record(*, tenant: Tenant, type: str, data: dict[str, Any], at: datetime | None) -> _Recorded:
    project = tenant.project
    payload = {"projectId": project.id, "organizationId": project.organization_id, **data}
    now = timezone.now()
    event_id, created_at = new_id("evt"), at or now
    # Looked up once: every read through the ``connection`` proxy looks the connection up.
    db = transaction.get_connection()
    with db.cursor() as cursor:
        cursor.execute(
            _RECORD_SQL,
            [
                event_id,
                project.id,
                tenant.mode,
                type,
                json.dumps(payload),
                created_at,
                project.id,
                tenant.mode,
                type,
            ],
        )
        (endpoints,) = cursor.fetchone()
        ids = (
            _deliveries_insert(cursor, events=[event_id], endpoints=endpoints, now=now)
            if endpoints
            else []
        )
    if ids:
        transaction.on_commit(lambda: enqueue(ids))
    return _Recorded(event_id, payload, created_at, db.alias)


@dataclass(frozen=True)
class RegisteredEndpoint:
    endpoint: Endpoint
    secret: str  # shown to the client once, in the registration response


def _limit_reached() -> WebhookLimitReached:
    return WebhookLimitReached(
        f"A project may have at most {MAX_ENDPOINTS_PER_PROJECT} webhook endpoints"
        " in each mode (test, live).",
        details={"limit": MAX_ENDPOINTS_PER_PROJECT},
    )


def endpoint_create(*, tenant: Tenant, url: str, events: list[str] | None) -> RegisteredEndpoint:
    """Register an endpoint.

    1. Refuse a project at its limit before any DNS lookup: a client at 20 endpoints cannot
       make the API resolve names for it.
    2. Check the URL (shape; with private networks refused, every address it resolves to,
       within ``SERVICE_WEBHOOK_RESOLVE_TIMEOUT_SECONDS``).
    3. Lock the project row, then count again: two registrations racing for the 20th place
       queue on the lock, and the second sees 20 and is refused.
    4. Create the endpoint with a new secret.
    """
    if Endpoint.objects.for_tenant(tenant).count() >= MAX_ENDPOINTS_PER_PROJECT:
        raise _limit_reached()
    try:
        validate_webhook_url(url)
    except UrlRefused as exc:
        raise ValidationError(str(exc), details={"url": [str(exc)]}) from exc
    with transaction.atomic():
        Project.objects.select_for_update().filter(id=tenant.project_id).values_list("id").get()
        if Endpoint.objects.for_tenant(tenant).count() >= MAX_ENDPOINTS_PER_PROJECT:
            raise _limit_reached()
        endpoint = Endpoint.objects.create(
            **tenant.owner(),
            url=url,
            events=sorted(set(events), key=EVENT_TYPES.index) if events is not None else None,
            secret=new_secret(),
        )
    return RegisteredEndpoint(endpoint=endpoint, secret=endpoint.secret)


def endpoint_enable(*, tenant: Tenant, webhook_id: str) -> Endpoint:
    """Re-enable a disabled endpoint (an active one is left as it is): new events are sent to
    it again, and its failure streak starts afresh. Deliveries failed while it was disabled
    stay FAILED; redeliver the ones wanted."""
    endpoint = endpoint_get(tenant=tenant, webhook_id=webhook_id)
    Endpoint.objects.filter(id=endpoint.id, status=Endpoint.Status.DISABLED).update(
        status=Endpoint.Status.ACTIVE, failing_since=None, disabled_at=None, disabled_reason=None
    )
    endpoint.refresh_from_db()
    return endpoint


# How long the replaced secret keeps signing after a rotation: default and bounds (7 days).
ROTATION_OVERLAP_DEFAULT_SECONDS = 86_400
ROTATION_OVERLAP_MAX_SECONDS = 604_800


def endpoint_rotate_secret(
    *, tenant: Tenant, webhook_id: str, overlap_seconds: int
) -> RegisteredEndpoint:
    """Give the endpoint a new signing secret, shown once in the answer.

    1. Lock the endpoint (two rotations queue: each replaces the one before).
    2. The new secret signs every delivery from now on, retries and redeliveries included.
       For ``overlap_seconds`` (by the database's clock) the secret it replaced signs them
       too, so a receiver can switch without a moment of refused deliveries; 0 ends it now.
    3. An earlier overlap ends here: at most two secrets sign at once, the new one and the
       one it replaced.
    """
    if not looks_like_id(webhook_id, "wh"):
        raise WebhookNotFound("No such webhook endpoint.")
    with transaction.atomic():
        endpoint = (
            Endpoint.objects.for_tenant(tenant).select_for_update().filter(id=webhook_id).first()
        )
        if endpoint is None:
            raise WebhookNotFound("No such webhook endpoint.")
        overlap = overlap_seconds > 0
        Endpoint.objects.filter(id=endpoint.id).update(
            secret=new_secret(),
            previous_secret=endpoint.secret if overlap else None,
            previous_secret_expires_at=(
                ExpressionWrapper(
                    Now() + timedelta(seconds=overlap_seconds), output_field=DateTimeField()
                )
                if overlap
                else None
            ),
        )
        endpoint.refresh_from_db()
    return RegisteredEndpoint(endpoint=endpoint, secret=endpoint.secret)


def endpoint_delete(*, tenant: Tenant, webhook_id: str) -> str:
    """Unregister: the endpoint and its delivery log go; nothing more is sent to it."""
    endpoint = endpoint_get(tenant=tenant, webhook_id=webhook_id)
    with transaction.atomic():
        # A delivery in flight finds its row gone and records nothing.
        Endpoint.objects.filter(id=endpoint.id).delete()
    return endpoint.id


def delivery_redeliver(*, tenant: Tenant, webhook_id: str, delivery_id: str) -> Delivery:
    """Re-queue a FAILED or PENDING delivery for an attempt now (same event, same evt_ id).

    A FAILED delivery gets one more attempt (FAILED again if it fails); a PENDING one is
    attempted now instead of at its scheduled time, and keeps its remaining retries.
    """
    endpoint = endpoint_get(tenant=tenant, webhook_id=webhook_id)
    if not looks_like_id(delivery_id, "dl"):
        raise DeliveryNotFound("No such delivery for this endpoint.")
    with transaction.atomic():
        delivery = (
            Delivery.objects.select_for_update()
            .select_related("event")
            .filter(endpoint=endpoint, id=delivery_id)
            .first()
        )
        if delivery is None:
            raise DeliveryNotFound("No such delivery for this endpoint.")
        if delivery.status == Delivery.Status.DELIVERED:
            raise DeliveryAlreadyDelivered(
                "This delivery was already delivered; only FAILED or PENDING ones are re-queued."
            )
        # The database's clock, like every due-time comparison (webhooks/delivery.py).
        Delivery.objects.filter(id=delivery.id).update(
            status=Delivery.Status.PENDING, next_attempt_at=Now()
        )
        delivery.refresh_from_db(fields=["status", "next_attempt_at"])
        ids = [delivery.id]
        transaction.on_commit(lambda: enqueue(ids))
    return delivery


# --- Retention --------------------------------------------------------------------------------

# Event data keys that name or describe a file's content, scrubbed when the file is purged.
FILE_PERSONAL_KEYS = ("filename", "path", "previousFilename", "previousPath", "metadata")


def events_scrub_file(*, project_id: str, file_id: str) -> int:
    """Remove the file's name, path and metadata from every stored event about it (the
    purge's tombstone: ids, sizes, types and times stay). Found through the ``event_file``
    index on ``data->>'fileId'``. What was already delivered cannot be recalled."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE webhooks_event SET data = data - %(keys)s::text[]
            WHERE (data ->> 'fileId') = %(file_id)s AND project_id = %(project_id)s
              AND data ?| %(keys)s::text[]
            """,
            {"keys": list(FILE_PERSONAL_KEYS), "file_id": file_id, "project_id": project_id},
        )
        return cursor.rowcount


@dataclass
class RetentionReport:
    deliveries: int = 0
    events: int = 0
    # Seconds each batch (select a page of ids, delete it) took, in order: flat when the
    # sweep scales (each batch is one index range scan from where the last one ended).
    batch_seconds: list[float] = field(default_factory=list)
    finished: bool = True  # False when the run stopped at its batch budget


# A page of event ids below the boundary, after the last page: a range scan of the primary key.
_PAGE = """
SELECT id FROM webhooks_event WHERE id > %(after)s AND id < %(before)s ORDER BY id LIMIT %(n)s
"""
# Their deliveries, through the delivery_event index. A delivery still PENDING (a redeliver of
# an old one) is kept; the status is checked again on the locked row, so a redeliver racing
# the sweep wins.
_DELETE_DELIVERIES = """
DELETE FROM webhooks_delivery WHERE event_id = ANY(%(ids)s) AND status <> 'PENDING'
"""
# The events left without deliveries (a kept PENDING delivery keeps its event).
_DELETE_EVENTS = """
DELETE FROM webhooks_event AS e WHERE e.id = ANY(%(ids)s)
  AND NOT EXISTS (SELECT 1 FROM webhooks_delivery AS d WHERE d.event_id = e.id)
"""


def events_delete_expired(
    *, now: datetime | None = None, max_batches: int | None = None
) -> RetentionReport:
    """The retention sweep: delete events created more than ``SERVICE_EVENT_RETENTION_DAYS``
    ago, with their deliveries.

    Ids are time-ordered (storage_service/ids.py), so "created before the cutoff" is "id below
    the cutoff's first id": each batch reads the next ``SERVICE_RETENTION_BATCH_SIZE`` event
    ids of the primary key from where the previous batch ended, deletes their deliveries
    (through the delivery_event index) and then them, in one short transaction. No table
    scan, no new index, no long lock, and every batch reads only its own rows, so its cost
    does not grow with the table or with what earlier batches deleted. A run stops after
    ``SERVICE_RETENTION_MAX_BATCHES`` batches and the next run goes on. Safe to run twice and
    from several processes at once.
    """
    cutoff = (now or timezone.now()) - timedelta(days=int(settings.SERVICE_EVENT_RETENTION_DAYS))
    before = first_id_at("evt", int(cutoff.timestamp() * 1000))
    budget = int(settings.SERVICE_RETENTION_MAX_BATCHES) if max_batches is None else max_batches
    size = int(settings.SERVICE_RETENTION_BATCH_SIZE)
    report = RetentionReport()
    after = ""
    while True:
        if len(report.batch_seconds) >= budget:
            report.finished = False
            return report
        started = time.monotonic()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_PAGE, {"after": after, "before": before, "n": size})
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return report
            cursor.execute(_DELETE_DELIVERIES, {"ids": ids})
            report.deliveries += cursor.rowcount
            cursor.execute(_DELETE_EVENTS, {"ids": ids})
            report.events += cursor.rowcount
        report.batch_seconds.append(time.monotonic() - started)
        after = ids[-1]
        if len(ids) < size:
            return report


# --- Many events in one statement (a job's batch) ----------------------------------------

# The change of a batch and, in the same statement, each event's data (a row of the caller's
# CTE ``{rows}`` as jsonb after projectId and organizationId) and the subscribed endpoints:
# the events and their deliveries are then inserted with ids made by new_id.
_ROWS_DATA_SQL = """
WITH {change}event_rows AS (SELECT (%s::jsonb || ({data}))::text AS data FROM {rows} AS r)
SELECT ARRAY(SELECT data FROM event_rows), ARRAY(
    SELECT e.id FROM webhooks_endpoint AS e
    WHERE e.project_id = %s AND e.mode = %s AND e.status = 'ACTIVE'
      AND (e.events IS NULL OR %s = ANY(e.events))
    ORDER BY e.id
){returning}
"""

_EVENTS_SQL = """
INSERT INTO webhooks_event (id, project_id, mode, type, data, created_at)
SELECT r.id, %s, %s, %s, r.data::jsonb, %s FROM unnest(%s::text[], %s::text[]) AS r(id, data)
"""


def events_record_rows(
    *,
    tenant: Tenant,
    type: str,
    change: ChangeSql,
    rows: str,
    data: str,
    data_params: list[Any],
) -> tuple[int, tuple[Any, ...]]:
    """One event (and its deliveries) per row of the CTE ``rows`` that ``change`` defines,
    with the change, inside the caller's transaction: what event_record does for one change,
    for a batch of changes (a job's). ``data``: a jsonb expression over the row ``r``
    (positional parameters ``data_params``), the fields each event is about. Returns the
    number of events and the values of ``change.returning``.

    The deliveries are sent by the project's drain (``drain_start`` after commit), not by a
    message naming them, so a job's fan-out never queues ahead of other projects."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events must be recorded inside the transaction of their change")
    project = tenant.project
    base = {"projectId": project.id, "organizationId": project.organization_id}
    now = timezone.now()
    sql = _ROWS_DATA_SQL.format(
        change=change.ctes,
        rows=rows,
        data=data,
        returning="".join(f", {expression}" for expression in change.returning),
    )
    params = [
        *change.params,
        json.dumps(base),
        *data_params,
        project.id,
        tenant.mode,
        type,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        datas, endpoints, *returned = cursor.fetchone()
        events = [new_id("evt") for _ in datas]
        if events:
            cursor.execute(_EVENTS_SQL, [project.id, tenant.mode, type, now, events, datas])
        deliveries = (
            _deliveries_insert(cursor, events=events, endpoints=endpoints, now=now)
            if events and endpoints
            else []
        )
    if deliveries:
        project_id = project.id
        transaction.on_commit(lambda: drain_start(project_id))
    return len(events), tuple(returned)
