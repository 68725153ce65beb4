"""The event envelope of the contract: what endpoints receive, built in one place."""

from __future__ import annotations

from typing import cast

from rest_framework.renderers import JSONRenderer

from events.models import Event
from events.shapes import EventEnvelopeJson, EventType
from storage_service.timefmt import iso_required


def event_envelope(event: Event) -> EventEnvelopeJson:
    """The contract's envelope, exactly as it is sent to endpoints."""
    return {
        "id": event.id,
        "type": cast(EventType, event.type),
        "created_at": iso_required(event.created_at),
        "data": event.data,
    }


# The API's own renderer: ``GET /v1/events/<id>`` answers ``{"data":`` these very bytes ``}``.
_RENDERER = JSONRenderer()


def envelope_body(event: Event) -> bytes:
    """The envelope as sent: compact JSON, UTF-8, written as every API response is."""
    return _RENDERER.render(event_envelope(event))
