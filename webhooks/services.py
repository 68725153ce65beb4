"""Every change of the webhooks app: events and their fan-out, endpoints, redelivery."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models.functions import Now
from django.utils import timezone

from accounts.models import Project
from storage_service.errors import (
    DeliveryAlreadyDelivered,
    DeliveryNotFound,
    ValidationError,
    WebhookLimitReached,
    WebhookNotFound,
)
from storage_service.ids import looks_like_id, new_id
from webhooks import tasks
from webhooks.models import Delivery, Endpoint, Event
from webhooks.network import UrlRefused, validate_webhook_url
from webhooks.signing import new_secret

MAX_ENDPOINTS_PER_PROJECT = 20
EVENT_TYPES: tuple[str, ...] = tuple(Event.Type.values)


# Every API change that records an event pays for this, so it is one round trip: the event
# row and, in the same statement, a delivery per subscribed endpoint (ids made here, one per
# possible endpoint). The foreign keys are deferred (Django's), so the deliveries may point at
# the event inserted beside them. The first attempt is due at the database's now(), the clock
# every due-time comparison uses, so an API host's clock cannot delay it.
# ``{change}`` is where a caller's own data-modifying CTEs go (event_record_with_change):
# the change, its event and its deliveries are then one statement, so one transaction, and
# ``{returning}`` what the caller reads back from its CTEs (e.g. a sequence-made id).
_RECORD_SQL = """
WITH {change}event AS (
    INSERT INTO webhooks_event (id, project_id, type, data, created_at)
    VALUES (%s, %s, %s, %s::jsonb, %s)
), deliveries AS (
    INSERT INTO webhooks_delivery
        (id, endpoint_id, event_id, status, attempts, created_at, next_attempt_at)
    SELECT (%s::text[])[row_number() OVER (ORDER BY e.id)], e.id, %s,
           'PENDING', 0, %s, now()
    FROM webhooks_endpoint AS e
    WHERE e.project_id = %s AND (e.events IS NULL OR %s = ANY(e.events))
    RETURNING id
)
SELECT ARRAY(SELECT id FROM deliveries){returning}
"""


@dataclass(frozen=True)
class ChangeSql:
    """A change written in the same statement as its event.

    ``ctes``: data-modifying CTEs (``name AS (INSERT ...), ``, each followed by a comma and
    a space) with positional ``%s`` parameters ``params``; PostgreSQL runs each exactly once
    and to completion, whatever the rest of the statement reads. ``returning``: SQL
    expressions over those CTEs (``(SELECT id FROM name)``) whose values the caller gets back.
    """

    ctes: str
    params: list[Any]
    returning: tuple[str, ...] = ()


def event_record(
    *, project: Project, type: str, data: dict[str, Any], at: datetime | None = None
) -> Event:
    """Write an event row inside the caller's transaction (the outbox), and its deliveries.

    ``data`` always starts with ``projectId`` and ``organizationId``; the caller adds the ids
    of the resources concerned and the fields the event is about.

    1. The event row.
    2. One PENDING delivery, due now, per endpoint of the project subscribed to the type, in
       the same transaction: the event and its deliveries commit (or vanish) together.
    3. After commit, one message asks a worker to send them all; if it is lost, the sweep
       finds the rows due and sends them.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events must be recorded inside the transaction of their change")
    return _record(project=project, type=type, data=data, at=at, change=None)[0]


def event_record_with_change(
    *, project: Project, type: str, data: dict[str, Any], change: ChangeSql
) -> tuple[Event, tuple[Any, ...]]:
    """As event_record, with the change itself in the same statement (issue 14): a single
    statement is atomic on its own, so the change, its event and its deliveries commit (or
    vanish) together with no surrounding transaction, in one round trip instead of BEGIN,
    one per statement, and COMMIT. Inside an atomic block it is simply part of it.

    Returns the event and the values of ``change.returning``."""
    return _record(project=project, type=type, data=data, at=None, change=change)


def _record(
    *,
    project: Project,
    type: str,
    data: dict[str, Any],
    at: datetime | None,
    change: ChangeSql | None,
) -> tuple[Event, tuple[Any, ...]]:
    payload = {"projectId": project.id, "organizationId": project.organization_id, **data}
    now = timezone.now()
    event = Event(id=new_id("evt"), project=project, type=type, data=payload, created_at=at or now)
    event._state.adding, event._state.db = False, connection.alias
    sql = _RECORD_SQL.format(
        change=change.ctes if change is not None else "",
        returning="".join(f", {expression}" for expression in change.returning)
        if change is not None
        else "",
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                *(change.params if change is not None else ()),
                event.id,
                project.id,
                type,
                json.dumps(payload),
                event.created_at,
                [new_id("dl") for _ in range(MAX_ENDPOINTS_PER_PROJECT)],
                event.id,
                now,
                project.id,
                type,
            ],
        )
        ids, *returned = cursor.fetchone()
    if ids:
        # Outside an atomic block (a change statement, committed by now) this runs at once.
        transaction.on_commit(lambda: tasks.enqueue(ids))
    return event, tuple(returned)


@dataclass(frozen=True)
class RegisteredEndpoint:
    endpoint: Endpoint
    secret: str  # shown to the client once, in the registration response


def endpoint_create(*, project: Project, url: str, events: list[str] | None) -> RegisteredEndpoint:
    """Register an endpoint.

    1. Check the URL (shape; with private networks refused, every address it resolves to).
    2. Lock the project row, then count: two registrations racing for the 20th place queue
       on the lock, and the second sees 20 and is refused.
    3. Create the endpoint with a new secret.
    """
    try:
        validate_webhook_url(url)
    except UrlRefused as exc:
        raise ValidationError(str(exc), details={"url": [str(exc)]}) from exc
    with transaction.atomic():
        Project.objects.select_for_update().filter(id=project.id).values_list("id").get()
        if Endpoint.objects.for_project(project).count() >= MAX_ENDPOINTS_PER_PROJECT:
            raise WebhookLimitReached(
                f"A project may have at most {MAX_ENDPOINTS_PER_PROJECT} webhook endpoints.",
                details={"limit": MAX_ENDPOINTS_PER_PROJECT},
            )
        endpoint = Endpoint.objects.create(
            project=project,
            url=url,
            events=sorted(set(events), key=EVENT_TYPES.index) if events is not None else None,
            secret=new_secret(),
        )
    return RegisteredEndpoint(endpoint=endpoint, secret=endpoint.secret)


def endpoint_get(*, project: Project, webhook_id: str) -> Endpoint:
    if not looks_like_id(webhook_id, "wh"):
        raise WebhookNotFound("No such webhook endpoint.")
    endpoint = Endpoint.objects.for_project(project).filter(id=webhook_id).first()
    if endpoint is None:
        raise WebhookNotFound("No such webhook endpoint.")
    return endpoint


def endpoint_delete(*, project: Project, webhook_id: str) -> str:
    """Unregister: the endpoint and its delivery log go; nothing more is sent to it."""
    endpoint = endpoint_get(project=project, webhook_id=webhook_id)
    with transaction.atomic():
        # A delivery in flight finds its row gone and records nothing.
        Endpoint.objects.filter(id=endpoint.id).delete()
    return endpoint.id


def delivery_redeliver(*, project: Project, webhook_id: str, delivery_id: str) -> Delivery:
    """Re-queue a FAILED or PENDING delivery for an attempt now (same event, same evt_ id).

    A FAILED delivery gets one more attempt (FAILED again if it fails); a PENDING one is
    attempted now instead of at its scheduled time, and keeps its remaining retries.
    """
    endpoint = endpoint_get(project=project, webhook_id=webhook_id)
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
        transaction.on_commit(lambda: tasks.enqueue(ids))
    return delivery
