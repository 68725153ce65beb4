"""JSON in and out of the webhooks endpoints."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from storage_service.serializers import StrictSerializer
from storage_service.timefmt import iso
from webhooks.models import Delivery, Endpoint, Event
from webhooks.network import MAX_URL_LENGTH


def _clean_url(value: Any) -> str:
    if not isinstance(value, str):
        raise serializers.ValidationError("Must be a string.")
    if len(value) > MAX_URL_LENGTH:
        raise serializers.ValidationError(f"Must be at most {MAX_URL_LENGTH} characters.")
    return value


def _clean_events(value: Any) -> list[str]:
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


class UrlField(serializers.Field):
    def to_internal_value(self, data: Any) -> str:
        return _clean_url(data)


class EventsField(serializers.Field):
    def to_internal_value(self, data: Any) -> list[str]:
        return _clean_events(data)


class EndpointCreateRequest(StrictSerializer):
    url = UrlField()
    events = EventsField(required=False)


class DeliveryListQuery(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=100, default=20)
    cursor = serializers.CharField(required=False, max_length=2000)


def endpoint_json(endpoint: Endpoint) -> dict[str, Any]:
    """The endpoint as every read shows it: never the secret."""
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "events": list(endpoint.events) if endpoint.events is not None else Event.Type.values,
        "status": endpoint.status,
        "createdAt": iso(endpoint.created_at),
    }


def delivery_json(delivery: Delivery) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "webhookId": delivery.endpoint_id,
        "eventId": delivery.event_id,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "responseStatus": delivery.response_status,
        "lastError": delivery.last_error,
        "deliveredAt": iso(delivery.delivered_at),
        "nextAttemptAt": iso(delivery.next_attempt_at),
        "createdAt": iso(delivery.created_at),
        "event": {"type": delivery.event.type, "createdAt": iso(delivery.event.created_at)},
    }
