from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from accounts.staffaccess import ProjectScoped
from files import console
from files.admin import file_page_inline
from storage_service.adminperms import ReadOnlyAdmin, ReadOnlyInline
from variants.models import Variant


@admin.register(Variant)
class VariantAdmin(ProjectScoped, ReadOnlyAdmin):
    """Read-only: variants change only through their services and workers (deleting one here
    would leave its result object behind, unknown to the purge)."""

    list_display = ("id", "label", "status", "file", "version", "output_width", "output_height")
    list_filter = ("status", "format", "fit")
    search_fields = ("=id", "=file__id", "label")
    search_help_text = "A variant or file id, or part of a label."
    show_full_result_count = False
    list_select_related = ("file",)
    raw_id_fields = ("file", "project", "source_object", "output_object")


@file_page_inline
class VariantInline(ReadOnlyInline):
    """The file's variants (every version's), read-only: they change only through their
    services and workers. The full record is one click away on the variant's own page."""

    model = Variant
    fields = (
        "id",
        "label",
        "version",
        "status",
        "output_width",
        "output_height",
        "size",
        "attempts",
        "failure_reason",
        "created_at",
        "finished_at",
        "download",
    )
    readonly_fields = fields
    ordering = ("id",)  # the variant_file_list index (file, id)
    show_change_link = True

    def get_queryset(self, request: HttpRequest) -> QuerySet[Variant]:
        return super().get_queryset(request).select_related("output_object", "file")

    @admin.display(description="Download")
    def download(self, obj: Variant) -> str:
        """The result's bytes (a short-lived signed URL), once the variant is ready."""
        stored = obj.output_object
        if obj.status != Variant.Status.READY or stored is None or stored.purged_at is not None:
            return "-"
        url = console.download_url(stored, f"{obj.label}.{obj.format}")
        return format_html('<a class="download variant" href="{}">{} ↓</a>', url, obj.label)
