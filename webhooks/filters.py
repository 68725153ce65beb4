"""The filters and the order of ``GET /v1/webhooks/<id>/deliveries`` and ``GET /v1/events``."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from storage_service.filtering import CleanedFilter, FilterSet
from storage_service.serializers import choice
from webhooks.models import Delivery, Event, EventQuerySet


class DeliveryFilterSet(FilterSet):
    """No filters: every delivery of the endpoint, newest first (ids are time-ordered)."""

    class Meta:
        model = Delivery
        fields: list[str] = []

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return super().filter_queryset(queryset).order_by("-id")


class EventFilterSet(FilterSet):
    """Newest first, keyset on ``(created_at, id)``: the ``event_project_created_id`` index,
    or with ``type`` the ``event_project_type_created`` one."""

    type = CleanedFilter(
        choice(tuple(Event.Type.values)), field_name="type", help_text="Only this event type."
    )

    class Meta:
        model = Event
        fields: list[str] = []

    def filter_queryset(self, queryset: EventQuerySet) -> EventQuerySet:
        return super().filter_queryset(queryset).order_by("-created_at", "-id")
