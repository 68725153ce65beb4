from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from delivery.models import DeliveryKey
from delivery.services import delivery_key_revoke_by_id
from storage_service.adminperms import ReadOnlyAdmin, each_through_service


@admin.register(DeliveryKey)
class DeliveryKeyAdmin(ReadOnlyAdmin):
    """Read-only but for revocation: a key's secret is shown once, to whoever issues it
    (the API, or ``manage.py issue_delivery_key``), never here."""

    list_display = ("id", "project", "mode", "created_at", "revoked_at")
    list_filter = ("mode",)
    search_fields = ("=id", "=project__id")
    search_help_text = "A delivery key or project id."
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    fields = ("id", "project", "mode", "created_at", "revoked_at")
    readonly_fields = fields
    actions = ["revoke"]

    @admin.action(
        description="Revoke the selected delivery keys (their URLs stop resolving)",
        permissions=["operate"],
    )
    def revoke(self, request: HttpRequest, queryset: QuerySet[DeliveryKey]) -> None:
        each_through_service(
            self,
            request,
            queryset.filter(revoked_at__isnull=True),
            lambda key: delivery_key_revoke_by_id(key_id=key.id),
            "Revoked {count} delivery key(s).",
        )
