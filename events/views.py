"""HTTP only: the contract's "Events" section. Routes are in storage_service/urls.py."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import tenant_of
from accounts.scopes import scope
from events import selectors
from events.envelope import event_envelope
from events.filters import EventFilterSet
from events.models import EventQuerySet
from events.shapes import EventEnvelopeJson
from storage_service.openapi import Shape, errors_of, path_id
from storage_service.pagination import CursorPagination
from storage_service.policies import SharedPolicies
from storage_service.shapes import Data

EVENT_ID = path_id("event_id", "evt")


class EventViewSet(SharedPolicies, viewsets.GenericViewSet):
    """The events webhooks receive, read back: the key's mode, the retention window."""

    pagination_class = CursorPagination
    filterset_class = EventFilterSet
    ordering = ("-created_at", "-id")
    cursor_scope = "events:createdAt:desc"

    def get_queryset(self) -> EventQuerySet:
        return selectors.event_queryset(tenant=tenant_of(self.request))

    @extend_schema(
        tags=["events"],
        extensions=scope("events:read"),
        summary="The events of the key's mode, newest first (the retention window's)",
        description="Each item is the envelope exactly as webhook endpoints receive it. "
        "A parameter given twice answers 400.",
        responses={200: Shape(EventEnvelopeJson)},
    )
    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None  # pagination_class is set
        return self.get_paginated_response([event_envelope(event) for event in page])

    @extend_schema(
        tags=["events"],
        extensions=scope("events:read"),
        summary="One event: the envelope, byte for byte the body its webhooks received",
        parameters=[EVENT_ID],
        responses={200: Shape(Data[EventEnvelopeJson]), **errors_of("EVENT_NOT_FOUND")},
    )
    def retrieve(self, request: Request, event_id: str) -> Response:
        event = selectors.event_get(tenant=tenant_of(request), event_id=event_id)
        answer: Data[EventEnvelopeJson] = {"data": event_envelope(event)}
        return Response(answer)
