from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import Project
from storage_service.timefmt import iso_required
from webhooks.models import Event


def event_record(
    *, project: Project, type: str, data: dict[str, Any], at: datetime | None = None
) -> Event:
    """Write an event row inside the caller's transaction (the outbox).

    ``data`` always starts with ``projectId`` and ``organizationId``; the caller adds the ids
    of the resources concerned and the fields the event is about.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events must be recorded inside the transaction of their change")
    payload = {"projectId": project.id, "organizationId": project.organization_id, **data}
    return Event.objects.create(
        project=project, type=type, data=payload, created_at=at or timezone.now()
    )


def event_envelope(event: Event) -> dict[str, Any]:
    """The contract's envelope, exactly as it is sent to endpoints."""
    return {
        "id": event.id,
        "type": event.type,
        "created_at": iso_required(event.created_at),
        "data": event.data,
    }
