from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse

from accounts.console import KeyKind, KeyRow, key_kind
from accounts.models import Project
from accounts.staffaccess import ProjectScoped
from accounts.tenancy import Tenant
from delivery.console import ConsoleSigner, console_key_rotate
from delivery.models import DeliveryKey
from delivery.services import (
    delivery_key_issue_for,
    delivery_key_revoke,
    delivery_key_revoke_by_id,
)
from files import console as file_console
from storage_service.adminperms import ReadOnlyAdmin, each_through_service


@admin.register(DeliveryKey)
class DeliveryKeyAdmin(ProjectScoped, ReadOnlyAdmin):
    """Read-only but for revocation: a key's secret is shown once, to whoever issues it
    (the API, or ``manage.py issue_delivery_key``), never here. The console's own keys
    (``console``, delivery/console.py) are listed too: revoking one stops the previews it
    signed, and "rotate" makes the next at once."""

    list_display = ("id", "project", "mode", "console", "created_at", "revoked_at")
    list_filter = ("mode", "console")
    search_fields = ("=id", "=project__id")
    search_help_text = "A delivery key or project id."
    list_select_related = ("project",)
    raw_id_fields = ("project",)
    fields = ("id", "project", "mode", "console", "created_at", "revoked_at")
    readonly_fields = fields
    actions = ["revoke", "rotate_console"]

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

    @admin.action(
        description="Rotate the selected console keys (previews are signed with a new one)",
        permissions=["operate"],
    )
    def rotate_console(self, request: HttpRequest, queryset: QuerySet[DeliveryKey]) -> None:
        each_through_service(
            self,
            request,
            queryset.filter(console=True, revoked_at__isnull=True),
            lambda key: console_key_rotate(key.id),
            "Rotated {count} console key(s).",
        )


# The console's previews and thumbnails are delivery URLs signed with its own keys.
file_console.preview_signer(ConsoleSigner)


# The project's page in the staff console lists, issues and revokes delivery keys too, through
# the same services as the API and manage.py (the cap of active keys included).


def _delivery_key_rows(project: Project) -> list[KeyRow]:
    return [
        KeyRow(
            id=key.id,
            label=key.id,
            mode=key.mode,
            name="",
            created_at=key.created_at,
            revoked_at=key.revoked_at,
            url=reverse("admin:delivery_deliverykey_change", args=[quote(key.pk)]),
        )
        for key in DeliveryKey.objects.filter(project=project, console=False).order_by("-id")[:50]
    ]


def _delivery_key_issue(project: Project, mode: str, name: str) -> str:
    return delivery_key_issue_for(project=project, mode=mode).secret


def _delivery_key_revoke(project: Project, key_id: str) -> str:
    key = get_object_or_404(DeliveryKey, project=project, id=key_id)
    return delivery_key_revoke(tenant=Tenant(project=project, mode=key.mode), key_id=key.id).mode


key_kind(
    KeyKind(
        slug="delivery",
        title="Delivery keys",
        rows=_delivery_key_rows,
        issue=_delivery_key_issue,
        revoke=_delivery_key_revoke,
        add_permission="delivery.add_deliverykey",
        change_permission="delivery.change_deliverykey",
        named=False,
    )
)
