"""Read queries of the webhooks app, each scoped to the tenant (project and mode) of the API key."""

from __future__ import annotations

from django.db.models import QuerySet
from django.db.models.fields.json import KeyTextTransform

from accounts.tenancy import Tenant
from storage_service.errors import EventNotFound, WebhookNotFound
from storage_service.ids import looks_like_id
from webhooks.models import Delivery, Endpoint, Event, EventQuerySet


def endpoint_get(*, tenant: Tenant, webhook_id: str) -> Endpoint:
    """One endpoint of the tenant; another tenant's answers as a missing one."""
    if not looks_like_id(webhook_id, "wh"):
        raise WebhookNotFound("No such webhook endpoint.")
    endpoint = Endpoint.objects.for_tenant(tenant).filter(id=webhook_id).first()
    if endpoint is None:
        raise WebhookNotFound("No such webhook endpoint.")
    return endpoint


def endpoint_list(*, tenant: Tenant) -> list[Endpoint]:
    """At most 20 rows: no paging needed. Newest first."""
    return list(Endpoint.objects.for_tenant(tenant).order_by("-created_at", "-id"))


def deliveries_of(deliveries: QuerySet[Delivery], *, endpoint: Endpoint) -> QuerySet[Delivery]:
    """The endpoint's deliveries among ``deliveries`` (served by the ``delivery_endpoint_id``
    index), each with its event's type and time: the log shows those, not the payload."""
    return deliveries.filter(endpoint=endpoint).select_related("event").defer("event__data")


def event_queryset(*, tenant: Tenant) -> EventQuerySet:
    """The tenant's retained events, newest first (the ``event_project_created_id`` index;
    with a type, ``event_project_type_created``)."""
    return Event.objects.for_tenant(tenant).retained().order_by("-created_at", "-id")


def event_get(*, tenant: Tenant, event_id: str) -> Event:
    """One retained event of the tenant; another tenant's answers as a missing one."""
    event = (
        Event.objects.for_tenant(tenant).retained().filter(id=event_id).first()
        if looks_like_id(event_id, "evt")
        else None
    )
    if event is None:
        raise EventNotFound("No such event (events are kept for the retention window).")
    return event


def file_events(*, file_id: str, project_id: str, limit: int = 50) -> list[Event]:
    """A file's newest events (the ``event_file`` index on ``data->>'fileId'``), each with
    its deliveries prefetched (``delivery_event`` index): the staff console's file page."""
    return list(
        Event.objects.annotate(file_id=KeyTextTransform("fileId", "data"))
        .filter(file_id=file_id, project_id=project_id)
        .order_by("-created_at", "-id")
        .prefetch_related("deliveries")[:limit]
    )
