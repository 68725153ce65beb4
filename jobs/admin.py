"""Jobs for operators: their progress, read-only (only the service changes them)."""

from __future__ import annotations

from django.contrib import admin

from accounts.staffaccess import ProjectScoped
from jobs.models import Job
from storage_service.adminperms import ReadOnlyAdmin


@admin.register(Job)
class JobAdmin(ProjectScoped, ReadOnlyAdmin):
    """Folder operations and their progress: staff see them, only the service changes them."""

    list_display = (
        "id",
        "project",
        "mode",
        "type",
        "status",
        "files_done",
        "files_total",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "type", "mode")
    # Exact matches only: each is an index's leading column (the id, the project).
    search_fields = ("=id", "=project__id")
    readonly_fields = (
        "id",
        "project",
        "mode",
        "type",
        "status",
        "params",
        "files_total",
        "files_done",
        "error",
        "cursor",
        "failed_attempts",
        "leased_until",
        "created_at",
        "updated_at",
        "finished_at",
    )
    exclude = ("lease_token",)
    show_full_result_count = False
