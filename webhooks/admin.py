"""Webhooks for operators: endpoints and their deliveries (with "redeliver"), also shown on
each event's page (events/admin.py).

Everything is read-only: an endpoint's URL is checked against private networks when it is
registered, and deliveries move only through the delivery engine. The changes offered are
"redeliver" and "re-enable" (an endpoint the delivery engine disabled), each through the same
service as the API's endpoint, so they do and refuse what the API does.

An endpoint's secrets are never shown: they are left out of every list, page and form here
(each was shown once, to the client, at registration or rotation). When a rotation's overlap
ends (the replaced secret stops signing) is shown.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from accounts.staffaccess import ProjectScoped
from accounts.tenancy import Tenant
from events.admin import by_id_prefix, event_page_inline
from storage_service.adminperms import ReadOnlyAdmin, ReadOnlyInline, each_through_service
from webhooks.models import Delivery, Endpoint
from webhooks.services import delivery_redeliver, endpoint_enable


@admin.action(description="Re-enable the selected endpoints", permissions=["operate"])
def enable(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    each_through_service(
        modeladmin,
        request,
        queryset.select_related("project"),
        lambda item: endpoint_enable(tenant=Tenant.of(item), webhook_id=item.id),
        "Re-enabled {count} endpoint(s).",
    )


@admin.register(Endpoint)
class EndpointAdmin(ProjectScoped, ReadOnlyAdmin):
    list_display = (
        "id",
        "short_url",
        "project",
        "status",
        "disabled_reason",
        "disabled_at",
        "subscribed",
        "overlap_ends",
        "created_at",
    )
    actions = [enable]
    list_filter = ("status",)
    list_select_related = ("project",)
    search_fields = ("=id", "url", "=project__id", "project__name")
    search_help_text = "An endpoint id, part of a URL, or a project id or name."
    ordering = ("-created_at", "-id")
    # Explicit fields, and the secret excluded too: a view page shows every field it is not
    # told to leave out.
    fields = (
        "id",
        "project",
        "url",
        "events",
        "status",
        "disabled_reason",
        "disabled_at",
        "failing_since",
        "overlap_ends",
        "created_at",
    )
    readonly_fields = fields
    exclude = ("secret", "previous_secret")

    @admin.display(description="URL", ordering="url")
    def short_url(self, obj: Endpoint) -> str:
        # A client's value: the page shows it whole; the list, cut short (escaped either way).
        return obj.url if len(obj.url) <= 80 else obj.url[:79] + "…"

    @admin.display(description="Old secret signs until")
    def overlap_ends(self, obj: Endpoint) -> str:
        """When a rotation's overlap ends: until then deliveries carry both signatures."""
        expires = obj.previous_secret_expires_at
        if obj.previous_secret is None or expires is None or expires <= timezone.now():
            return "-"
        return expires.isoformat(timespec="seconds")

    @admin.display(description="Events")
    def subscribed(self, obj: Endpoint) -> str:
        return "every type" if obj.events is None else ", ".join(obj.events)


@admin.action(description="Redeliver the selected deliveries now", permissions=["operate"])
def redeliver(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    """One call of the API's service per delivery: each is locked, checked and re-queued (an
    attempt due now, a message after commit), or refused with the API's reason."""
    each_through_service(
        modeladmin,
        request,
        queryset.select_related("endpoint__project"),
        lambda item: delivery_redeliver(
            tenant=Tenant.of(item.endpoint), webhook_id=item.endpoint_id, delivery_id=item.id
        ),
        "Re-queued {count} delivery(ies).",
    )


@admin.register(Delivery)
class DeliveryAdmin(ProjectScoped, ReadOnlyAdmin):
    project_path = "endpoint__project"
    list_display = (
        "id",
        "endpoint_id",
        "event_type",
        "event_id",
        "status",
        "attempts",
        "response_status",
        "short_error",
        "next_attempt_at",
        "delivered_at",
        "created_at",
    )
    list_filter = ("status",)
    list_select_related = ("event",)
    # Exact ids only: each is an index (primary key, delivery_endpoint_id, the event's).
    search_fields = ("=id", "=event__id", "=endpoint__id")
    search_help_text = "A delivery, event or endpoint id."
    ordering = ("-id",)  # ids are time-ordered: newest first, read off the primary key
    show_full_result_count = False
    actions = [redeliver]
    fields = (
        "id",
        "endpoint",
        "event",
        "status",
        "attempts",
        "response_status",
        "last_error",
        "created_at",
        "next_attempt_at",
        "leased_until",
        "delivered_at",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Delivery]:
        # The list shows the event's type only: its payload stays in the database.
        return super().get_queryset(request).defer("event__data")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        return by_id_prefix(
            queryset, search_term, {"dl": "id", "evt": "event_id", "wh": "endpoint_id"}
        )

    @admin.display(description="Event type", ordering="event__type")
    def event_type(self, obj: Delivery) -> str:
        return obj.event.type

    @admin.display(description="Last error")
    def short_error(self, obj: Delivery) -> str:
        error = obj.last_error or ""
        return error if len(error) <= 80 else error[:79] + "…"


@event_page_inline
class DeliveryInline(ReadOnlyInline):
    model = Delivery
    fields = (
        "endpoint",
        "status",
        "attempts",
        "response_status",
        "last_error",
        "next_attempt_at",
        "delivered_at",
    )
    readonly_fields = fields
    ordering = ("id",)
    show_change_link = True
