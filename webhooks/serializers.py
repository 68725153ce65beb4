"""JSON in and out of the webhooks endpoints."""

from __future__ import annotations

import re
from typing import Any, cast

from django.utils import timezone
from rest_framework import serializers

from events.models import Event
from storage_service.serializers import (
    CleanedField,
    StrictSerializer,
    clean_timestamp,
    strict_int,
    with_schema,
)
from storage_service.timefmt import iso, iso_required
from webhooks.models import Delivery, Endpoint
from webhooks.network import MAX_URL_LENGTH, URL_PATTERN, UrlRefused, parse_url
from webhooks.services import ROTATION_OVERLAP_DEFAULT_SECONDS, ROTATION_OVERLAP_MAX_SECONDS
from webhooks.shapes import (
    DeliveryJson,
    DeliveryStatus,
    DisabledReason,
    EndpointStatus,
    EventType,
    WebhookJson,
)

_URL = re.compile(URL_PATTERN)


@with_schema(
    lambda: {
        "type": "string",
        "maxLength": MAX_URL_LENGTH,
        "pattern": URL_PATTERN,
        "description": "http(s); an ASCII host name, an IPv4 address or a bracketed IPv6 "
        "address; an optional port, path and query; no credentials, fragment or spaces. "
        "Unless the deployment allows private networks, the host must resolve, and only to "
        "public addresses (checked again at every delivery).",
        "example": "https://example.com/hooks/storage",
    }
)
def clean_url(value: Any) -> str:
    if not isinstance(value, str):
        raise serializers.ValidationError("Must be a string.")
    if len(value) > MAX_URL_LENGTH:
        raise serializers.ValidationError(f"Must be at most {MAX_URL_LENGTH} characters.")
    try:
        parse_url(value)
    except UrlRefused as exc:
        raise serializers.ValidationError(str(exc)) from exc
    if not _URL.fullmatch(value):
        raise serializers.ValidationError(
            "Must be an http(s) URL of ASCII characters: a host name, an IPv4 address or a "
            "bracketed IPv6 address, then an optional port, path and query."
        )
    return value


@with_schema(
    lambda: {
        "type": "array",
        "items": {"type": "string", "enum": list(Event.Type.values)},
        "minItems": 1,
        "description": "The event types to send; omit it to receive every type (including "
        "types added later).",
    }
)
def clean_events(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise serializers.ValidationError("Must be an array of event types.")
    if not value:
        raise serializers.ValidationError(
            "Must list at least one event type; omit it to receive every event."
        )
    unknown = [item for item in value if not isinstance(item, str) or item not in Event.Type]
    if unknown:
        raise serializers.ValidationError(
            f"Unknown event type(s): {', '.join(map(str, unknown))}."
            f" Known: {', '.join(Event.Type.values)}."
        )
    return list(value)


class EndpointCreateRequest(StrictSerializer):
    url = CleanedField(clean_url)
    events = CleanedField(clean_events, required=False)


class ReplayRequest(StrictSerializer):
    since = CleanedField(clean_timestamp)
    until = CleanedField(clean_timestamp, required=False)


class RotateSecretRequest(StrictSerializer):
    overlapSeconds = CleanedField(
        strict_int(0, ROTATION_OVERLAP_MAX_SECONDS),
        required=False,
        default=ROTATION_OVERLAP_DEFAULT_SECONDS,
    )


def endpoint_json(endpoint: Endpoint) -> WebhookJson:
    """The endpoint as every read shows it: never the secret."""
    events = list(endpoint.events) if endpoint.events is not None else Event.Type.values
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "events": cast(list[EventType], events),
        "status": cast(EndpointStatus, endpoint.status),
        "disabledAt": iso(endpoint.disabled_at),
        "disabledReason": cast(DisabledReason | None, endpoint.disabled_reason),
        "previousSecretExpiresAt": overlap_end(endpoint),
        "createdAt": iso_required(endpoint.created_at),
    }


def overlap_end(endpoint: Endpoint) -> str | None:
    """When the replaced secret stops signing, while it still does."""
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret is None or expires is None or expires <= timezone.now():
        return None
    return iso(expires)


def delivery_json(delivery: Delivery) -> DeliveryJson:
    return {
        "id": delivery.id,
        "webhookId": delivery.endpoint_id,
        "eventId": delivery.event_id,
        "status": cast(DeliveryStatus, delivery.status),
        "attempts": delivery.attempts,
        "responseStatus": delivery.response_status,
        "lastError": delivery.last_error,
        "deliveredAt": iso(delivery.delivered_at),
        "nextAttemptAt": iso(delivery.next_attempt_at),
        "createdAt": iso_required(delivery.created_at),
        "event": {
            "type": cast(EventType, delivery.event.type),
            "createdAt": iso_required(delivery.event.created_at),
        },
    }
