"""The filters and the order of ``GET /v1/events``."""

from __future__ import annotations

from events.models import Event, EventQuerySet
from storage_service.filtering import CleanedFilter, FilterSet
from storage_service.serializers import choice


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
