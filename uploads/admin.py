from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.tenancy import Tenant
from storage_service.adminperms import ReadOnlyAdmin, each_through_service
from uploads.models import UploadSession, UploadToken
from uploads.tokens import upload_token_revoke


@admin.register(UploadSession)
class UploadSessionAdmin(ReadOnlyAdmin):
    """Read-only: sessions change only through the API and the expiry sweep.

    The store's upload id is left out on purpose: it is never shown to anyone.
    """

    list_display = ("id", "project", "status", "size", "part_count", "created_at", "expires_at")
    list_filter = ("status",)
    search_fields = ("id", "file__id", "project__id")
    fields = (
        "id",
        "project",
        "file",
        "status",
        "abort_reason",
        "size",
        "part_size",
        "part_count",
        "created_at",
        "updated_at",
        "expires_at",
        "completed_at",
        "aborted_at",
    )
    readonly_fields = fields


@admin.action(description="Revoke the selected upload tokens now", permissions=["operate"])
def revoke_upload_tokens(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet
) -> None:
    each_through_service(
        modeladmin,
        request,
        queryset.select_related("project"),
        lambda token: upload_token_revoke(tenant=Tenant.of(token), token_id=token.id),
        "Revoked {count} upload token(s).",
    )


@admin.register(UploadToken)
class UploadTokenAdmin(ReadOnlyAdmin):
    """Read-only, with a revoke action (superusers): tokens are minted through the API only.
    The token's hash is left out: it is of no use to anyone reading this page."""

    list_display = (
        "id",
        "project",
        "mode",
        "path",
        "files_started",
        "max_files",
        "created_at",
        "expires_at",
        "revoked_at",
    )
    list_filter = ("mode", ("revoked_at", admin.EmptyFieldListFilter))
    list_select_related = ("project",)
    search_fields = ("id", "project__id")
    actions = [revoke_upload_tokens]
    fields = (
        "id",
        "project",
        "mode",
        "path",
        "max_file_size_bytes",
        "allowed_content_types",
        "max_files",
        "files_started",
        "allowed_origins",
        "metadata",
        "created_at",
        "expires_at",
        "revoked_at",
    )
    readonly_fields = fields
