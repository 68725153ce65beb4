"""Files for operators: find any file, see its versions, and delete or restore it.

Everything is read-only. A file's fields move together with its stored objects, versions and
events (a rename emits `file.updated`, a status change must keep the outbox and the purge
consistent), so the only changes offered go through the same services as the API: the
"delete" and "restore" actions, which emit their events like an API call would. The file
page shows its versions inline, and what other apps register (variants: the file's variants).
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib import admin
from django.contrib.admin.options import InlineModelAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.tenancy import Tenant
from files.models import File, FileVersion, StoredObject
from files.services import file_delete, file_restore
from storage_service.adminperms import ReadOnlyAdmin, ReadOnlyInline, each_through_service

InlineT = TypeVar("InlineT", bound="InlineModelAdmin[Any, Any]")


class FileVersionInline(ReadOnlyInline):
    model = FileVersion
    fields = ("version", "content_type", "size", "checksum", "stored_object", "created_at")
    readonly_fields = fields
    ordering = ("-version",)


# Inlines of the apps built on files, shown on the file's page (variants: the file's
# variants). Each registers from its own admin module with @file_page_inline, as a model
# registers with @admin.register: files imports none of them.
_file_page_inlines: list[type[InlineModelAdmin[Any, Any]]] = []


def file_page_inline(inline: type[InlineT]) -> type[InlineT]:
    """Class decorator: show this inline (of another app's model) on the file's page."""
    if inline not in _file_page_inlines:
        _file_page_inlines.append(inline)
    return inline


@admin.action(
    description="Delete the selected files (restorable during the grace window)",
    permissions=["operate"],
)
def delete_files(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    each_through_service(
        modeladmin,
        request,
        queryset.select_related("project"),
        lambda file: file_delete(tenant=Tenant.of(file), file_id=file.id),
        "Deleted {count} file(s).",
    )


@admin.action(description="Restore the selected deleted files", permissions=["operate"])
def restore_files(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    each_through_service(
        modeladmin,
        request,
        queryset.select_related("project"),
        lambda file: file_restore(tenant=Tenant.of(file), file_id=file.id),
        "Restored {count} file(s).",
    )


@admin.register(File)
class FileAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "filename",
        "path",
        "project",
        "status",
        "content_type",
        "size",
        "version",
        "created_at",
    )
    list_filter = ("status", "content_type", "sniffed_type")
    list_select_related = ("project",)
    # Exact ids (the index), filename substrings, and the project by id or name.
    search_fields = ("=id", "filename", "=project__id", "project__name")
    search_help_text = "A file id, part of a filename, or a project id or name."
    date_hierarchy = "created_at"
    show_full_result_count = False  # an exact count of millions of rows on every page is slow
    actions = [delete_files, restore_files]
    inlines = [FileVersionInline]
    fields = (
        "id",
        "project",
        "filename",
        "path",
        "status",
        "version",
        "content_type",
        "sniffed_type",
        "size",
        "checksum",
        "metadata",
        "current_object",
        "replacement_object",
        "created_at",
        "updated_at",
        "uploaded_at",
        "deleted_at",
        "status_before_delete",
        "purged_at",
        "expires_at",
    )
    readonly_fields = fields

    def get_inlines(
        self, request: HttpRequest, obj: File | None
    ) -> list[type[InlineModelAdmin[Any, Any]]]:
        return [*self.inlines, *_file_page_inlines]


@admin.register(StoredObject)
class StoredObjectAdmin(ReadOnlyAdmin):
    list_display = ("id", "project", "state", "declared_type", "size", "created_at", "purged_at")
    list_filter = ("state",)
    search_fields = ("=storage_key", "=project__id")
    readonly_fields = (
        "project",
        "storage_key",
        "state",
        "declared_type",
        "declared_size",
        "size",
        "sniffed_type",
        "checksum",
        "upload_expires_at",
        "created_at",
        "purged_at",
    )
    show_full_result_count = False
