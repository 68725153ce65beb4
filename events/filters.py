"""The filters of ``GET /v1/events``."""

from __future__ import annotations

from events.models import Event
from storage_service.filtering import CleanedFilter, FilterSet
from storage_service.serializers import choice


class EventFilterSet(FilterSet):
    """The view's order is newest first, keyset on ``(created_at, id)``: the
    ``event_project_created_id`` index, or with ``type`` the ``event_project_type_created``
    one."""

    type = CleanedFilter(
        choice(tuple(Event.Type.values)), field_name="type", help_text="Only this event type."
    )

    class Meta:
        model = Event
        fields: list[str] = []
