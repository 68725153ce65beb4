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
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from accounts.models import Project
from accounts.staffaccess import ProjectScoped, may_see_project
from accounts.tenancy import Tenant
from events.selectors import file_events
from files import console
from files.models import File, FileVersion, StoredObject
from files.services import file_delete, file_restore
from storage_service.adminperms import ReadOnlyAdmin, ReadOnlyInline, each_through_service

# Values a client sent (names, paths, types) are shown escaped and cut to this many characters.
SHOWN_CHARS = 60


def shorten(value: str | None, limit: int = SHOWN_CHARS) -> str:
    value = value or ""
    return value if len(value) <= limit else value[: limit - 1] + "…"


class ContentFamilyFilter(admin.SimpleListFilter):
    """Types by family (image/*, video/*, …): a fixed list, whatever types clients declared."""

    title = "content type"
    parameter_name = "family"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(family, f"{family}/*") for family in console.FAMILIES]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        family = self.value()
        if family in console.FAMILIES:
            return queryset.filter(content_type__startswith=f"{family}/")
        return queryset


InlineT = TypeVar("InlineT", bound="InlineModelAdmin[Any, Any]")


class FileVersionInline(ReadOnlyInline):
    model = FileVersion
    fields = ("version", "short_type", "human_size", "checksum", "created_at", "download")
    readonly_fields = fields
    ordering = ("-version",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[FileVersion]:
        return super().get_queryset(request).select_related("stored_object", "file")

    @admin.display(description="Type")
    def short_type(self, obj: FileVersion) -> str:
        return shorten(obj.content_type, 40)

    @admin.display(description="Size")
    def human_size(self, obj: FileVersion) -> str:
        return filesizeformat(obj.size)

    @admin.display(description="Download")
    def download(self, obj: FileVersion) -> str:
        if obj.stored_object.purged_at is not None:
            return "purged"
        url = console.download_url(obj.stored_object, obj.file.filename)
        return format_html('<a class="download" href="{}">v{} ↓</a>', url, obj.version)


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
class FileAdmin(ProjectScoped, ReadOnlyAdmin):
    # No thumbnails here: the list spans every project, and a thumbnail is a delivery URL of
    # its tenant (the folder browser shows them, a page of one tenant at a time).
    list_display = (
        "name",
        "folder",
        "project_name",
        "mode",
        "status",
        "human_size",
        "created_at",
    )
    list_display_links = ("name",)
    list_filter = ("status", "mode", ContentFamilyFilter)
    list_select_related = ("project", "current_object")
    # Ids are time-ordered: newest first, read off the primary key (every other index of files
    # starts with the project; this list spans every project).
    ordering = ("-id",)
    change_form_template = "admin/files/file/console_change_form.html"
    # Exact ids (the index), filename substrings, and the project by id or name.
    search_fields = ("=id", "filename", "=project__id", "project__name")
    search_help_text = "A file id, part of a filename, or a project id or name."
    # No date drill-down: its year links read every file's date. An exact count of millions
    # of rows on every page is slow: the pages count to 10,000 rows at most.
    show_full_result_count = False
    paginator = console.BoundedPaginator
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
        "exact_size",
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

    @admin.display(description="Name", ordering="filename")
    def name(self, obj: File) -> str:
        return shorten(obj.filename)

    @admin.display(description="Folder")
    def folder(self, obj: File) -> str:
        return "/" + shorten(obj.path or "", 40)

    @admin.display(description="Project", ordering="project__name")
    def project_name(self, obj: File) -> str:
        return shorten(obj.project.name, 30)

    @admin.display(description="Size", ordering="size")
    def human_size(self, obj: File) -> str:
        return filesizeformat(obj.size)

    @admin.display(description="Size")
    def exact_size(self, obj: File) -> str:
        # The file's page: readable, and exact for staff comparing with a client's figure.
        readable = filesizeformat(obj.size)
        return readable if obj.size < 1024 else f"{readable} ({obj.size:,} bytes)"

    def get_urls(self) -> list[URLPattern]:
        browse = self.admin_site.admin_view(self.browse_view)
        return [
            path("browse/<str:project_id>/", browse, name="files_file_browse"),
            *super().get_urls(),
        ]

    def browse_view(self, request: HttpRequest, project_id: str) -> HttpResponse:
        """One folder of a project in one mode: its folders, then its files, newest first."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        project = Project.objects.filter(id=project_id).first()
        if project is None or not may_see_project(request.user, project.id):
            raise Http404("No such project.")
        mode = console.clean_mode(request.GET.get("mode"))
        folder, error = console.clean_folder(request.GET.get("path"))
        page = console.folder_page(
            project=project, mode=mode, path=folder, cursor=request.GET.get("after")
        )
        base = reverse("admin:files_file_browse", args=[project.id])
        signer = console.signer_for(request)
        thumbnails = signer.thumbnails(page.files) if signer is not None else {}
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Files of {shorten(project.name)} ({mode})",
            "page": page,
            "mode": mode,
            "modes": ["live", "test"],
            "base": base,
            "error": error,
            "rows": [
                {
                    "file": file,
                    "name": shorten(file.filename),
                    "type": shorten(file.content_type, 40),
                    "size": filesizeformat(file.size),
                    "thumbnail": thumbnails.get(file.id),
                    "image": console.preview_kind(file.sniffed_type) == "image",
                    "url": reverse("admin:files_file_change", args=[quote(file.id)]),
                }
                for file in page.files
            ],
            "folders": [
                {
                    "name": shorten(row["name"]),
                    "path": f"{folder}/{row['name']}" if folder else row["name"],
                    "count": row["file_count"],
                }
                for row in page.folders
            ],
        }
        return TemplateResponse(request, "admin/files/file/browse.html", context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        file = (
            File.objects.select_related("current_object", "project")
            .filter(id=unquote(object_id))
            .first()
        )
        extra: dict[str, Any] = dict(extra_context or {})
        if file is not None and self.has_view_permission(request, file):
            events = file_events(file_id=file.id, project_id=file.project_id)
            extra.update(
                preview=console.file_preview(file, console.signer_for(request)),
                events=events,
                browse_url=reverse("admin:files_file_browse", args=[file.project_id])
                + f"?mode={file.mode}",
            )
        return super().change_view(request, object_id, form_url, extra)


@admin.register(StoredObject)
class StoredObjectAdmin(ProjectScoped, ReadOnlyAdmin):
    list_display = ("id", "project", "state", "short_type", "human_size", "created_at", "purged_at")
    list_filter = ("state",)
    search_fields = ("=storage_key", "=project__id")
    paginator = console.BoundedPaginator
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

    @admin.display(description="Declared type")
    def short_type(self, obj: StoredObject) -> str:
        return shorten(obj.declared_type, 40)

    @admin.display(description="Size", ordering="size")
    def human_size(self, obj: StoredObject) -> str:
        return "-" if obj.size is None else filesizeformat(obj.size)
