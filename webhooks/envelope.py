"""The event envelope of the contract: what endpoints receive, built in one place."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from storage_service.timefmt import iso_required
from webhooks.models import Event


class EventEnvelope(TypedDict):
    id: str
    type: str
    created_at: str
    data: dict[str, Any]


def event_envelope(event: Event) -> EventEnvelope:
    """The contract's envelope, exactly as it is sent to endpoints."""
    return {
        "id": event.id,
        "type": event.type,
        "created_at": iso_required(event.created_at),
        "data": event.data,
    }


def envelope_body(event: Event) -> bytes:
    """The envelope as sent: compact JSON, UTF-8."""
    return json.dumps(event_envelope(event), separators=(",", ":"), ensure_ascii=False).encode()
