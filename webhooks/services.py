"""Every change of the webhooks app: the deliveries each event brings (written with it, by
events/services.py), endpoints, redelivery."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import DateTimeField, ExpressionWrapper
from django.db.models.functions import Now

from accounts.models import Project
from accounts.tenancy import Tenant
from events import outbox
from events.services import EVENT_TYPES
from storage_service.celery import app
from storage_service.errors import (
    DeliveryAlreadyDelivered,
    DeliveryNotFound,
    ValidationError,
    WebhookLimitReached,
    WebhookNotFound,
)
from storage_service.ids import new_id
from storage_service.lookups import found_by_id
from webhooks.models import Delivery, Endpoint
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
    with transaction.atomic():
        endpoint = found_by_id(
            Endpoint.objects.for_tenant(tenant).select_for_update(),
            webhook_id,
            prefix="wh",
            missing=WebhookNotFound,
            message="No such webhook endpoint.",
        )
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
    with transaction.atomic():
        delivery = found_by_id(
            Delivery.objects.select_for_update().select_related("event").filter(endpoint=endpoint),
            delivery_id,
            prefix="dl",
            missing=DeliveryNotFound,
            message="No such delivery for this endpoint.",
        )
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


# --- What recording an event writes for webhooks (events/outbox.py) ----------------------

# Retention (events_delete_expired) deletes an old event's deliveries through the
# delivery_event index. A delivery still PENDING (a redeliver of an old one) is kept, and its
# event with it; the status is checked again on the locked row, so a redeliver racing the
# sweep wins.
_DELETE_DELIVERIES = """
DELETE FROM webhooks_delivery WHERE event_id = ANY(%(ids)s) AND status <> 'PENDING'
"""
_KEEPS_EVENT = "EXISTS (SELECT 1 FROM webhooks_delivery AS d WHERE d.event_id = e.id)"


# The endpoints of the tenant subscribed to an event's type, selected in the statement that
# records the event. Parameters: the project, the mode, the type.
_SUBSCRIBERS_SQL = """ARRAY(
    SELECT e.id FROM webhooks_endpoint AS e
    WHERE e.project_id = %s AND e.mode = %s AND e.status = 'ACTIVE'
      AND (e.events IS NULL OR %s = ANY(e.events))
    ORDER BY e.id
)"""


def _deliveries_write(
    cursor: Any, events: Sequence[str], endpoints: Sequence[str], now: datetime
) -> list[str]:
    """The follower's write: a delivery of each recorded event to each subscribed endpoint."""
    return _deliveries_insert(cursor, events=events, endpoints=endpoints, now=now)


def _send_recorded(ids: Sequence[str]) -> None:
    """After an event's commit: its deliveries, named in one message."""
    enqueue(ids)


def _drain_recorded(project_id: str) -> None:
    """After a batch of events' commit: the project's drain sends their deliveries."""
    drain_start(project_id)


# What recording an event writes for webhooks (registered by webhooks/apps.py).
FOLLOWER = outbox.Follower(
    subscribers=_SUBSCRIBERS_SQL,
    write=_deliveries_write,
    one_after_commit=_send_recorded,
    rows_after_commit=_drain_recorded,
    retention_delete=_DELETE_DELIVERIES,
    retention_keeps=_KEEPS_EVENT,
)
