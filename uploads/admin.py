from __future__ import annotations

from django.contrib import admin

from storage_service.adminperms import ReadOnlyAdmin
from uploads.models import UploadSession


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
