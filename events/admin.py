"""Events for operators: the outbox of changes already made, read-only. What other apps hang
on an event (webhooks: its deliveries) is shown on its page, registered from their own admin
modules with @event_page_inline."""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib import admin
from django.contrib.admin.options import InlineModelAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.staffaccess import ProjectScoped
from events.models import Event
from storage_service.adminperms import ReadOnlyAdmin
from storage_service.ids import looks_like_id

InlineT = TypeVar("InlineT", bound="InlineModelAdmin[Any, Any]")

# Inlines of the apps built on events, shown on the event's page (webhooks: its deliveries),
# as a model registers with @admin.register: events imports none of them.
_event_page_inlines: list[type[InlineModelAdmin[Any, Any]]] = []


def event_page_inline(inline: type[InlineT]) -> type[InlineT]:
    """Class decorator: show this inline (of another app's model) on the event's page."""
    if inline not in _event_page_inlines:
        _event_page_inlines.append(inline)
    return inline


def by_id_prefix(
    queryset: QuerySet, search_term: str, columns: dict[str, str], otherwise: str | None = None
) -> tuple[QuerySet, bool]:
    """Search by the one column the term's id prefix names (``evt_…`` is an event id).

    Django's default ORs every search field into one condition, and an OR with an unindexed
    column (an event's type) reads the whole table; this way each search is one index lookup
    (or, for an event type, the newest-first scan of the primary key, filtered).
    """
    term = search_term.strip()
    if not term:
        return queryset, False
    for prefix, column in columns.items():
        if looks_like_id(term, prefix):
            return queryset.filter(**{column: term}), False
    if otherwise is not None:
        return queryset.filter(**{otherwise: term}), False
    return queryset.none(), False


@admin.register(Event)
class EventAdmin(ProjectScoped, ReadOnlyAdmin):
    list_display = ("id", "type", "project", "created_at")
    list_filter = ("type",)
    list_select_related = ("project",)
    search_fields = ("=id", "=type", "=project__id")
    search_help_text = "An event id, an exact type (file.uploaded), or a project id."
    ordering = ("-id",)  # time-ordered ids: the primary key serves the newest-first page
    show_full_result_count = False
    fields = ("id", "type", "project", "created_at", "data")
    readonly_fields = fields

    def get_inlines(
        self, request: HttpRequest, obj: Event | None
    ) -> list[type[InlineModelAdmin[Any, Any]]]:
        return [*self.inlines, *_event_page_inlines]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        return by_id_prefix(
            queryset, search_term, {"evt": "id", "proj": "project_id"}, otherwise="type"
        )
