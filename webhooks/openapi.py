"""The OpenAPI description of webhook endpoints and deliveries (see storage_service/openapi.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema

from storage_service.openapi import (
    COMPONENTS,
    EMPTY_BODY,
    TIMESTAMP,
    body,
    data_of,
    describe,
    nullable,
    obj,
    page_of,
    path_id,
    public_id,
    ref,
    responses,
)
from webhooks.models import Delivery, Endpoint, Event
from webhooks.network import MAX_URL_LENGTH
from webhooks.services import MAX_ENDPOINTS_PER_PROJECT
from webhooks.views import WebhookViewSet

WEBHOOK_ID = path_id("webhook_id", "wh")
DELIVERY_ID = path_id("delivery_id", "dl")
EVENT_TYPE = {"type": "string", "enum": list(Event.Type.values)}
NOT_FOUND = ("WEBHOOK_NOT_FOUND",)

COMPONENTS.update(
    {
        "Webhook": obj(
            ["id", "url", "events", "status", "createdAt"],
            {
                "id": public_id("wh"),
                "url": {"type": "string", "maxLength": MAX_URL_LENGTH},
                "events": {
                    "type": "array",
                    "items": EVENT_TYPE,
                    "description": "The event types sent to it (every type when none was given).",
                },
                "status": {"type": "string", "enum": list(Endpoint.Status.values)},
                "createdAt": TIMESTAMP,
            },
            # Never the secret (or anything else): it is shown once, in the create answer.
            additionalProperties=False,
        ),
        "Delivery": obj(
            [
                "id",
                "webhookId",
                "eventId",
                "status",
                "attempts",
                "responseStatus",
                "lastError",
                "deliveredAt",
                "nextAttemptAt",
                "createdAt",
                "event",
            ],
            {
                "id": public_id("dl"),
                "webhookId": public_id("wh"),
                "eventId": public_id("evt"),
                "status": {"type": "string", "enum": list(Delivery.Status.values)},
                "attempts": {"type": "integer", "minimum": 0},
                "responseStatus": nullable(
                    {"type": "integer", "description": "The receiver's last HTTP status."}
                ),
                "lastError": nullable({"type": "string"}),
                "deliveredAt": nullable(TIMESTAMP),
                "nextAttemptAt": nullable(TIMESTAMP),
                "createdAt": TIMESTAMP,
                "event": obj(["type", "createdAt"], {"type": EVENT_TYPE, "createdAt": TIMESTAMP}),
            },
        ),
    }
)

describe(
    WebhookViewSet,
    create=extend_schema(
        tags=["webhooks"],
        summary="Register an endpoint (the answer is the only time its secret is shown)",
        request=body(
            ["url"],
            {
                "url": {
                    "type": "string",
                    "maxLength": MAX_URL_LENGTH,
                    "description": "http(s), a host that resolves; private networks are refused "
                    "unless the deployment allows them.",
                    "example": "https://example.com/hooks/storage",
                },
                "events": {
                    "type": "array",
                    "items": EVENT_TYPE,
                    "minItems": 1,
                    "description": "Omit it to receive every event type.",
                },
            },
        ),
        responses=responses(
            {
                201: data_of(
                    obj(
                        ["webhook", "secret"],
                        {
                            "webhook": ref("Webhook"),
                            "secret": {
                                "type": "string",
                                "description": "Signs every delivery (HMAC-SHA256); shown once.",
                            },
                        },
                    )
                )
            },
            "VALIDATION_ERROR",
            "WEBHOOK_LIMIT_REACHED",
        ),
    ),
    list=extend_schema(
        tags=["webhooks"],
        summary=f"The project's endpoints, newest first (at most {MAX_ENDPOINTS_PER_PROJECT})",
        responses=responses(
            {
                200: obj(
                    ["data"],
                    {
                        "data": {
                            "type": "array",
                            "items": ref("Webhook"),
                            "maxItems": MAX_ENDPOINTS_PER_PROJECT,
                        }
                    },
                )
            }
        ),
    ),
    retrieve=extend_schema(
        tags=["webhooks"],
        summary="Get an endpoint (never its secret)",
        parameters=[WEBHOOK_ID],
        responses=responses({200: data_of(ref("Webhook"))}, *NOT_FOUND),
    ),
    destroy=extend_schema(
        tags=["webhooks"],
        summary="Unregister an endpoint (its delivery log goes with it)",
        parameters=[WEBHOOK_ID],
        responses=responses(
            {
                200: data_of(
                    obj(
                        ["id", "deleted"],
                        {"id": public_id("wh"), "deleted": {"type": "boolean", "enum": [True]}},
                    )
                )
            },
            *NOT_FOUND,
        ),
    ),
    deliveries=extend_schema(
        tags=["webhooks"],
        summary="An endpoint's deliveries, newest first (keyset pages)",
        parameters=[
            WEBHOOK_ID,
            OpenApiParameter("limit", int, description="1 to 100.", default=20),
            OpenApiParameter(
                "cursor", str, description="The previous page's `nextCursor`, unchanged."
            ),
        ],
        responses=responses({200: page_of(ref("Delivery"))}, *NOT_FOUND, "VALIDATION_ERROR"),
    ),
    redeliver=extend_schema(
        tags=["webhooks"],
        summary="Attempt a FAILED or PENDING delivery again now (same event id)",
        parameters=[WEBHOOK_ID, DELIVERY_ID],
        request=EMPTY_BODY,
        responses=responses(
            {202: data_of(ref("Delivery"))},
            *NOT_FOUND,
            "DELIVERY_NOT_FOUND",
            "DELIVERY_ALREADY_DELIVERED",
            "VALIDATION_ERROR",
        ),
    ),
)
