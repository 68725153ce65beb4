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
from storage_service.adminperms import ReadOnlyAdmin, each_through_service
from uploads.models import UploadSession, UploadToken
from uploads.tokens import upload_token_create, upload_token_revoke


@admin.register(UploadSession)
class UploadSessionAdmin(ProjectScoped, ReadOnlyAdmin):
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
class UploadTokenAdmin(ProjectScoped, ReadOnlyAdmin):
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


# The project's page in the staff console lists upload tokens, revokes them, and issues one
# with the API's defaults (one file, fifteen minutes, any folder, type and size within the
# project's limits), through the same services as the API. Bounded tokens are minted
# through the API (POST /v1/upload-tokens), which takes every bound.


def _upload_token_rows(project: Project) -> list[KeyRow]:
    return [
        KeyRow(
            id=token.id,
            label=token.id,
            mode=token.mode,
            name=f"{token.files_started}/{token.max_files} file(s), "
            f"expires {token.expires_at:%Y-%m-%d %H:%M}",
            created_at=token.created_at,
            revoked_at=token.revoked_at,
            url=reverse("admin:uploads_uploadtoken_change", args=[quote(token.pk)]),
        )
        for token in UploadToken.objects.filter(project=project).order_by("-id")[:50]
    ]


def _upload_token_issue(project: Project, mode: str, name: str) -> str:
    return upload_token_create(tenant=Tenant(project=project, mode=mode)).token


def _upload_token_revoke(project: Project, key_id: str) -> str:
    token = get_object_or_404(UploadToken, project=project, id=key_id)
    return upload_token_revoke(tenant=Tenant.of(token), token_id=token.id).mode


key_kind(
    KeyKind(
        slug="upload-token",
        title="Upload tokens",
        rows=_upload_token_rows,
        issue=_upload_token_issue,
        revoke=_upload_token_revoke,
        add_permission="uploads.add_uploadtoken",
        change_permission="uploads.change_uploadtoken",
        named=False,
    )
)
