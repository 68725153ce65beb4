"""HTTP only: the contract's "Webhooks" section. Routes are in storage_service/urls.py."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import tenant_of
from accounts.scopes import scope
from storage_service.issued import IssuedResourceSchema, IssuedResourceViews
from storage_service.openapi import Links, Shape, each, errors_of, path_id
from storage_service.pagination import CursorPagination
from storage_service.policies import SharedPolicies
from storage_service.serializers import EmptyRequest, validated
from storage_service.shapes import Data
from webhooks import replay, selectors, services
from webhooks.filters import DeliveryFilterSet
from webhooks.models import Delivery, Endpoint
from webhooks.serializers import (
    EndpointCreateRequest,
    ReplayRequest,
    RotateSecretRequest,
    delivery_json,
    endpoint_json,
)
from webhooks.services import MAX_ENDPOINTS_PER_PROJECT
from webhooks.shapes import (
    DeliveryJson,
    ReplayJson,
    WebhookCreatedJson,
    WebhookDeletedJson,
    WebhookJson,
)

WEBHOOK_ID = path_id("webhook_id", "wh")
DELIVERY_ID = path_id("delivery_id", "dl")
NOT_FOUND = ("WEBHOOK_NOT_FOUND",)


ENDPOINTS = IssuedResourceSchema(
    tag="webhooks",
    read=scope("webhooks:read"),
    write=scope("webhooks:write"),
    id_parameter=WEBHOOK_ID,
    not_found="WEBHOOK_NOT_FOUND",
)


class WebhookViewSet(IssuedResourceViews[Endpoint], SharedPolicies, viewsets.ViewSet):
    resource_field, secret_field, ended_field = "webhook", "secret", "deleted"

    def render(self, resource: Endpoint) -> WebhookJson:
        return endpoint_json(resource)

    @ENDPOINTS.create(
        summary="Register an endpoint (the answer is the only time its secret is shown)",
        description=(
            f"A project has at most {MAX_ENDPOINTS_PER_PROJECT} endpoints in each mode (test,"
            " live); a key sees and registers only those of its own mode."
        ),
        request=EndpointCreateRequest,
        created=Links(
            Data[WebhookCreatedJson],
            each(
                (
                    "webhooks_retrieve",
                    "webhooks_destroy",
                    "webhooks_deliveries",
                    "webhooks_enable",
                    "webhooks_replay",
                    "webhooks_rotate_secret",
                ),
                webhook_id="$response.body#/data/webhook/id",
            ),
        ),
        errors=["WEBHOOK_LIMIT_REACHED"],
    )
    def create(self, request: Request) -> Response:
        body = validated(EndpointCreateRequest, request.data)
        registered = services.endpoint_create(
            tenant=tenant_of(request), url=body["url"], events=body.get("events")
        )
        return self.issued(registered.endpoint, registered.secret)

    @ENDPOINTS.list(
        summary=f"The project's endpoints, newest first (at most {MAX_ENDPOINTS_PER_PROJECT})",
        listed=Data[list[WebhookJson]],
    )
    def list(self, request: Request) -> Response:
        return self.listed(selectors.endpoint_list(tenant=tenant_of(request)))

    @ENDPOINTS.retrieve(summary="Get an endpoint (never its secret)", found=Data[WebhookJson])
    def retrieve(self, request: Request, webhook_id: str) -> Response:
        return self.found(services.endpoint_get(tenant=tenant_of(request), webhook_id=webhook_id))

    @ENDPOINTS.on_one(
        ENDPOINTS.write,
        summary="Re-enable a disabled endpoint (an active one is answered as it is)",
        description="New events are sent to it again and its failure streak starts afresh. "
        "Deliveries that failed while it was disabled stay `FAILED`: redeliver those wanted.",
        request=EmptyRequest,
        answer=Data[WebhookJson],
    )
    def enable(self, request: Request, webhook_id: str) -> Response:
        validated(EmptyRequest, request.data)
        return self.found(
            services.endpoint_enable(tenant=tenant_of(request), webhook_id=webhook_id)
        )

    @ENDPOINTS.revoke(
        summary="Unregister an endpoint (its delivery log goes with it)",
        ended=Data[WebhookDeletedJson],
    )
    def destroy(self, request: Request, webhook_id: str) -> Response:
        return self.ended(
            services.endpoint_delete(tenant=tenant_of(request), webhook_id=webhook_id)
        )

    @extend_schema(
        tags=["webhooks"],
        extensions=scope("webhooks:write"),
        summary="Attempt a FAILED or PENDING delivery again now (same event id)",
        description="A FAILED delivery gets one more attempt; a PENDING one is attempted now "
        "and keeps its remaining retries.",
        parameters=[WEBHOOK_ID, DELIVERY_ID],
        request=EmptyRequest,
        responses={
            202: Shape(Data[DeliveryJson]),
            **errors_of(*NOT_FOUND, "DELIVERY_NOT_FOUND", "DELIVERY_ALREADY_DELIVERED"),
        },
    )
    def redeliver(self, request: Request, webhook_id: str, delivery_id: str) -> Response:
        validated(EmptyRequest, request.data)
        delivery = services.delivery_redeliver(
            tenant=tenant_of(request), webhook_id=webhook_id, delivery_id=delivery_id
        )
        answer: Data[DeliveryJson] = {"data": delivery_json(delivery)}
        return Response(answer, status=202)

    @extend_schema(
        tags=["webhooks"],
        extensions=scope("webhooks:write"),
        summary="Send the endpoint every retained event of a window again, as new deliveries",
        description="A new delivery, attempted at once, for every event of the window "
        "(`since` included, `until` excluded; `until` defaults to now) that the endpoint's "
        "subscription matches, whether or not it was delivered before. Both ends lie within "
        "the event retention window and not in the future. The deliveries go through the "
        "same per-project caps as live ones, so a large replay is sent at the pace the "
        "receiver keeps up with; an event that passes the retention window before its "
        "turn is skipped.",
        parameters=[WEBHOOK_ID],
        request=ReplayRequest,
        responses={202: Shape(Data[ReplayJson]), **errors_of(*NOT_FOUND)},
    )
    def replay(self, request: Request, webhook_id: str) -> Response:
        body = validated(ReplayRequest, request.data)
        count = replay.endpoint_replay(
            tenant=tenant_of(request),
            webhook_id=webhook_id,
            since=body["since"],
            until=body.get("until"),
        )
        answer: Data[ReplayJson] = {"data": {"deliveries": count}}
        return Response(answer, status=202)

    @ENDPOINTS.on_one(
        ENDPOINTS.write,
        summary="Give the endpoint a new signing secret (shown once, in this answer)",
        description="The new secret signs every delivery from now on (retries, redeliveries "
        "and replays too). For `overlapSeconds` (default 86400, at most 604800; 0 ends it "
        "at once) the replaced secret signs them as well: `SERVICE-Signature: t=<t>,v1=<new>,"
        "v1=<old>`, which Stripe's verifiers and the Python client's accept under either "
        "secret. A rotation ends any earlier overlap: at most two secrets sign at once.",
        request=RotateSecretRequest,
        answer=Data[WebhookCreatedJson],
    )
    def rotate_secret(self, request: Request, webhook_id: str) -> Response:
        body = validated(RotateSecretRequest, request.data)
        rotated = services.endpoint_rotate_secret(
            tenant=tenant_of(request),
            webhook_id=webhook_id,
            overlap_seconds=body["overlapSeconds"],
        )
        return self.issued(rotated.endpoint, rotated.secret, status=200)


class DeliveryViewSet(SharedPolicies, viewsets.GenericViewSet):
    name = "Webhook"  # what OPTIONS calls the route's resource, as on the webhook's own routes
    pagination_class = CursorPagination
    filterset_class = DeliveryFilterSet
    ordering = ("-id",)  # newest first: ids are time-ordered
    cursor_scope = "deliveries"
    queryset = Delivery.objects.all()  # list() narrows it to the endpoint's

    @extend_schema(
        operation_id="webhooks_deliveries",
        tags=["webhooks"],
        extensions=scope("webhooks:read"),
        summary="An endpoint's deliveries, newest first (keyset pages)",
        parameters=[WEBHOOK_ID],
        responses={
            200: Links(
                DeliveryJson,
                {
                    "webhooks_redeliver": {
                        "webhook_id": "$request.path.webhook_id",
                        "delivery_id": "$response.body#/data/0/id",
                    }
                },
            ),
            **errors_of(*NOT_FOUND),
        },
    )
    def list(self, request: Request, webhook_id: str) -> Response:
        # The query's refusals (400) come before the endpoint's (404).
        deliveries = self.filter_queryset(self.get_queryset())
        endpoint = services.endpoint_get(tenant=tenant_of(request), webhook_id=webhook_id)
        page = self.paginate_queryset(selectors.deliveries_of(deliveries, endpoint=endpoint))
        assert page is not None  # pagination_class is set
        return self.get_paginated_response([delivery_json(delivery) for delivery in page])
