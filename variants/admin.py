from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from variants.models import Variant


@admin.register(Variant)
class VariantAdmin(admin.ModelAdmin):
    """Read-only: variants change only through their services and workers."""

    list_display = ("id", "label", "status", "file", "version", "output_width", "output_height")
    list_filter = ("status", "format", "fit")
    search_fields = ("id", "file__id", "label")
    list_select_related = ("file",)
    raw_id_fields = ("file", "project", "source_object", "output_object")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
