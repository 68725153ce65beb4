"""What the webhook endpoints answer, and the request every delivery makes (see
storage_service/openapi/); the event envelope it carries is events/shapes.py's."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from drf_spectacular.utils import OpenApiResponse, OpenApiWebhook, extend_schema

from events.shapes import EventEnvelopeJson, EventId, EventType
from storage_service.openapi import JsonSchema, Shape, id_schema
from storage_service.shapes import Timestamp

WebhookId = Annotated[str, id_schema("wh")]
DeliveryStatus = Literal["PENDING", "DELIVERED", "FAILED"]
EndpointStatus = Literal["ACTIVE", "DISABLED"]
DisabledReason = Literal["GONE", "FAILING"]


class WebhookJson(TypedDict):
    """A registered endpoint, as every read shows it: never its secret. ``events`` lists the
    types sent to it (every type, including later ones, when it was registered without).

    ``previousSecretExpiresAt``: after a secret rotation, until when the replaced secret
    still signs every delivery beside the new one (null outside an overlap).

    ``status`` is ``DISABLED`` once the endpoint answered 410 Gone (``disabledReason``
    ``GONE``) or failed every attempt for 5 days (``FAILING``; the setting
    ``SERVICE_WEBHOOK_DISABLE_AFTER_SECONDS``): nothing is sent to it until it is re-enabled
    (``POST /v1/webhooks/{webhook_id}/enable``). ``disabledAt`` and ``disabledReason`` are
    null while it is ``ACTIVE``."""

    id: WebhookId
    url: str
    events: list[EventType]
    status: EndpointStatus
    disabledAt: Timestamp | None
    disabledReason: DisabledReason | None
    previousSecretExpiresAt: Timestamp | None
    createdAt: Timestamp


class WebhookCreatedJson(TypedDict):
    """The registration's or a rotation's answer: the only times the signing secret is
    shown."""

    webhook: WebhookJson
    secret: Annotated[
        str,
        JsonSchema(
            pattern="^whsec_[A-Za-z0-9_-]+$",
            description="Signs every delivery: `SERVICE-Signature: t=<unix seconds>,v1=<hex "
            "HMAC-SHA256 of '<t>.<raw body>'>` (during a rotation's overlap, a second `v1=` "
            "under the replaced secret). Store it now.",
        ),
    ]


class WebhookDeletedJson(TypedDict):
    id: WebhookId
    deleted: Literal[True]


class DeliveryEventJson(TypedDict):
    type: EventType
    createdAt: Timestamp


class DeliveryJson(TypedDict):
    """One event for one endpoint. ``responseStatus`` is the last attempt's HTTP status
    (null when none came); ``lastError`` is null after a success; ``nextAttemptAt`` is null
    once the delivery is ``DELIVERED`` or ``FAILED``."""

    id: Annotated[str, id_schema("dl")]
    webhookId: WebhookId
    eventId: EventId
    status: DeliveryStatus
    attempts: Annotated[int, JsonSchema(minimum=0)]
    responseStatus: int | None
    lastError: str | None
    deliveredAt: Timestamp | None
    nextAttemptAt: Timestamp | None
    createdAt: Timestamp
    event: DeliveryEventJson


class ReplayJson(TypedDict):
    """How many deliveries the replay makes: one per retained event of the window that the
    endpoint's subscription matches, attempted at once, paced by the per-project caps."""

    deliveries: Annotated[int, JsonSchema(minimum=0)]


# The requests our deliveries make, in the document's "webhooks" section (OpenAPI 3.1).
EVENT_WEBHOOK = OpenApiWebhook(
    name="event",
    decorator=extend_schema(
        operation_id="webhook_event",
        tags=["webhooks"],
        summary="An event, POSTed to each endpoint subscribed to its type",
        description="Sent with `Content-Type: application/json`, `User-Agent: "
        "SERVICE-Webhooks/1.0` and `SERVICE-Signature: t=<unix seconds>,v1=<hex>`, where `v1` "
        "is the HMAC-SHA256, under the endpoint's secret, of `<t>.<raw body>` (during a "
        "secret rotation's overlap, a second `v1=` under the replaced secret: accept the "
        "request when any `v1` matches, as Stripe's verifiers do). Verify it over "
        "the raw body before parsing it, reject a timestamp more than about 5 minutes old, "
        "deduplicate on the envelope's `id`, and "
        "answer 2xx within 10 seconds. Any other answer, or none, is retried after 1 s, 5 s, "
        "30 s and 2 min (`SERVICE_WEBHOOK_RETRY_DELAYS_MS`), then the delivery is `FAILED`.",
        auth=[],
        request=Shape(EventEnvelopeJson),
        responses={200: OpenApiResponse(description="Any 2xx acknowledges the event.")},
    ),
)
