"""HTTP only: the contract's "Webhooks" section. Routes are in storage_service/urls.py."""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import project_of
from storage_service.serializers import StrictSerializer, validated, validated_query
from webhooks import selectors, services
from webhooks.serializers import (
    DeliveryListQuery,
    EndpointCreateRequest,
    delivery_json,
    endpoint_json,
)


class EmptyRequest(StrictSerializer):
    """A POST that takes no body: any field is an error."""


class WebhookViewSet(viewsets.ViewSet):
    def create(self, request: Request) -> Response:
        body = validated(EndpointCreateRequest, request.data)
        registered = services.endpoint_create(
            project=project_of(request), url=body["url"], events=body.get("events")
        )
        return Response(
            {"data": {"webhook": endpoint_json(registered.endpoint), "secret": registered.secret}},
            status=201,
        )

    def list(self, request: Request) -> Response:
        endpoints = selectors.endpoint_list(project=project_of(request))
        return Response({"data": [endpoint_json(e) for e in endpoints]})

    def retrieve(self, request: Request, webhook_id: str) -> Response:
        endpoint = services.endpoint_get(project=project_of(request), webhook_id=webhook_id)
        return Response({"data": endpoint_json(endpoint)})

    def destroy(self, request: Request, webhook_id: str) -> Response:
        deleted = services.endpoint_delete(project=project_of(request), webhook_id=webhook_id)
        return Response({"data": {"id": deleted, "deleted": True}})

    def deliveries(self, request: Request, webhook_id: str) -> Response:
        query = validated_query(DeliveryListQuery, request)
        endpoint = services.endpoint_get(project=project_of(request), webhook_id=webhook_id)
        page = selectors.delivery_list(
            endpoint=endpoint, limit=query["limit"], cursor=query.get("cursor")
        )
        return Response(
            {
                "data": [delivery_json(d) for d in page.items],
                "pagination": page.pagination_json(),
            }
        )

    def redeliver(self, request: Request, webhook_id: str, delivery_id: str) -> Response:
        validated(EmptyRequest, request.data)
        delivery = services.delivery_redeliver(
            project=project_of(request), webhook_id=webhook_id, delivery_id=delivery_id
        )
        return Response({"data": delivery_json(delivery)}, status=202)
