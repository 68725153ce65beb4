"""Read queries of the events app, each scoped to the tenant (project and mode) of the API key."""

from __future__ import annotations

from django.db.models.fields.json import KeyTextTransform

from accounts.tenancy import Tenant
from events.models import Event, EventQuerySet
from storage_service.errors import EventNotFound
from storage_service.ids import looks_like_id


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
    its webhook deliveries prefetched (``delivery_event`` index): the staff console's file
    page. The deliveries are webhooks' rows, reached by their relation's name: events
    imports nothing of the app above it."""
    return list(
        Event.objects.annotate(file_id=KeyTextTransform("fileId", "data"))
        .filter(file_id=file_id, project_id=project_id)
        .order_by("-created_at", "-id")
        .prefetch_related("deliveries")[:limit]
    )
