from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.defaultfilters import filesizeformat
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from accounts import console
from accounts.keys import display_prefix, generate_key, hash_key
from accounts.limits import clean_allowed_types
from accounts.models import ApiKey, BandwidthUsage, Organization, Project, ProjectLimits
from accounts.scopes import SCOPE_HELP, SCOPES, parse_scopes
from accounts.services import api_key_issue, api_key_revoke
from accounts.staffaccess import (
    ProjectScoped,
    ProjectScopedInline,
    granted_projects,
    may_see_project,
    sees_every_project,
)
from accounts.tenancy import Tenant
from accounts.usage import RECENT_DAYS, ProjectUsage, project_usage, recent_bandwidth_subquery
from storage_service.adminperms import ReadOnlyAdmin, StaffView
from storage_service.errors import ApiError

# The admin is the storage service's console for staff (storage_service/templates/admin).
admin.site.site_header = "Storage console"
admin.site.site_title = "Storage console"
admin.site.index_title = "Projects, files and deliveries"
# The whole width for the lists: the sidebar repeats the index, one click away.
admin.site.enable_nav_sidebar = False


class ProjectInline(ProjectScopedInline, StaffView, admin.TabularInline):
    model = Project
    project_path = "pk"
    extra = 0
    fields = ("id", "name", "created_at")
    readonly_fields = ("id", "created_at")
    show_change_link = True


@admin.register(Organization)
class OrganizationAdmin(StaffView, admin.ModelAdmin):
    list_display = ("name", "id", "created_at")
    search_fields = ("name", "id")
    readonly_fields = ("id", "created_at")
    inlines = [ProjectInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Organization]:
        # Staff see the organizations of their projects (and, on each, those projects only).
        rows = super().get_queryset(request)
        if sees_every_project(request.user):
            return rows
        return rows.filter(id__in=granted_projects(request.user).values("organization_id"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A new organization's projects would be granted to no one: superusers create them.
        return sees_every_project(request.user)


def _bytes(count: int) -> str:
    # The exact figure (for billing) and a readable one.
    return f"{count} bytes ({filesizeformat(count)})"


class ProjectLimitsForm(forms.ModelForm):
    class Meta:
        model = ProjectLimits
        fields = ("mode", "max_storage_bytes", "max_file_size_bytes", "allowed_content_types")

    def clean_allowed_content_types(self) -> list[str] | None:
        value = self.cleaned_data.get("allowed_content_types")
        if not value:
            return None  # an empty field allows every type
        try:
            return clean_allowed_types(value)
        except DjangoValidationError as exc:
            raise forms.ValidationError(exc.messages) from exc


class ProjectLimitsInline(StaffView, admin.TabularInline):
    """Each mode's limits, with what that mode uses beside them (empty: no limit)."""

    model = ProjectLimits
    form = ProjectLimitsForm
    extra = 0
    max_num = len(ApiKey.Environment.choices)
    fields = ("mode", "usage", "max_storage_bytes", "max_file_size_bytes", "allowed_content_types")
    readonly_fields = ("usage",)
    verbose_name_plural = "limits (per mode; an empty field is no limit)"

    @admin.display(description="Uses now")
    def usage(self, obj: ProjectLimits) -> str:
        if obj.pk is None:
            return "-"
        usage = project_usage(Tenant(project=obj.project, mode=obj.mode))
        return f"{_bytes(usage.storage_bytes)} in {usage.files} file(s)"


@admin.register(Project)
class ProjectAdmin(ProjectScoped, StaffView, admin.ModelAdmin):
    """Projects with their keys and their usage.

    The changelist shows only the recent bandwidth, annotated in its one query (each row
    reads at most RECENT_DAYS rows of an index). Storage is shown on the change page only:
    summing every live object of each of 100 listed projects would make one list page cost
    as much as reading every object of those projects.
    """

    list_display = ("name", "id", "organization", "recent_bandwidth", "files_link", "created_at")
    list_select_related = ("organization",)
    search_fields = ("name", "id", "organization__name")
    fields = (
        "id",
        "organization",
        "name",
        "created_at",
        "storage",
        "bandwidth",
        "recent_bandwidth_detail",
    )
    readonly_fields = ("id", "created_at", "storage", "bandwidth", "recent_bandwidth_detail")
    # Keys are listed (and issued and revoked) by the console's section of the page.
    inlines = [ProjectLimitsInline]
    project_path = "pk"
    # Who of the staff sees the project: set by superusers only (accounts/staffaccess.py).
    grant_fields = ("staff_users", "staff_groups")
    filter_horizontal = grant_fields
    change_form_template = "admin/accounts/project/console_change_form.html"

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if sees_every_project(request.user):
            return (*self.fields, *self.grant_fields)
        return self.fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A new project is granted to no one yet: superusers create it, then grant it.
        return sees_every_project(request.user)

    def _visible_project(self, request: HttpRequest, project_id: str) -> Project:
        project = Project.objects.filter(id=project_id).first()
        if project is None or not may_see_project(request.user, project.id):
            raise Http404("No such project.")
        return project

    @admin.display(description="Files")
    def files_link(self, obj: Project) -> str:
        return format_html(
            '<a href="{}">browse</a>', reverse("admin:files_file_browse", args=[obj.id])
        )

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path(
                "<str:project_id>/keys/<slug:kind>/issue/",
                wrap(require_POST(self.issue_key_view)),
                name="accounts_project_issue_key",
            ),
            path(
                "<str:project_id>/keys/<slug:kind>/<str:key_id>/revoke/",
                wrap(require_POST(self.revoke_key_view)),
                name="accounts_project_revoke_key",
            ),
            *super().get_urls(),
        ]

    def _project_page(self, project: Project, mode: str) -> HttpResponseRedirect:
        url = reverse("admin:accounts_project_change", args=[quote(project.id)])
        return HttpResponseRedirect(f"{url}?mode={mode}#keys")

    def issue_key_view(self, request: HttpRequest, project_id: str, kind: str) -> HttpResponse:
        """Issue a key of one kind for one mode: its secret is shown once, in the message."""
        key_kind = console.key_kinds.get(kind)
        if key_kind is None:
            raise Http404("No such kind of key.")
        project = self._visible_project(request, project_id)
        if not request.user.has_perm(key_kind.add_permission):
            raise PermissionDenied
        mode = request.POST.get("mode", "")
        if mode not in ApiKey.Environment.values:
            messages.error(request, "Choose live or test.")
            return self._project_page(project, ApiKey.Environment.LIVE)
        try:
            secret = key_kind.issue(project, mode, (request.POST.get("name") or "")[:100])
        except ApiError as exc:
            messages.error(request, exc.message)
        else:
            messages.warning(
                request, f"New {key_kind.title[:-1].lower()} (shown once; copy it now): {secret}"
            )
        return self._project_page(project, mode)

    def revoke_key_view(
        self, request: HttpRequest, project_id: str, kind: str, key_id: str
    ) -> HttpResponse:
        key_kind = console.key_kinds.get(kind)
        if key_kind is None:
            raise Http404("No such kind of key.")
        project = self._visible_project(request, project_id)
        if not request.user.has_perm(key_kind.change_permission):
            raise PermissionDenied
        try:
            mode = key_kind.revoke(project, key_id)
        except ApiError as exc:
            messages.error(request, exc.message)
            return self._project_page(project, ApiKey.Environment.LIVE)
        messages.success(request, f"Revoked {key_kind.title[:-1].lower()} {key_id}.")
        return self._project_page(project, mode)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        extra: dict[str, Any] = dict(extra_context or {})
        project = Project.objects.filter(id=unquote(object_id)).first()
        if project is not None and self.has_view_permission(request, project):
            mode = request.GET.get("mode")
            mode = mode if mode in ApiKey.Environment.values else ApiKey.Environment.LIVE
            tenant = Tenant(project=project, mode=mode)
            usage = console.snapshot_record(tenant)
            extra.update(
                chart=console.chart_svg(console.history(tenant)),
                chart_mode=mode,
                modes=ApiKey.Environment.values,
                usage=usage,
                limits=ProjectLimits.objects.filter(project=project, mode=mode).first(),
                key_sections=[
                    {
                        "kind": kind,
                        "rows": kind.rows(project),
                        "can_issue": request.user.has_perm(kind.add_permission),
                        "can_revoke": request.user.has_perm(kind.change_permission),
                    }
                    for kind in console.key_kinds.values()
                ],
                browse_url=reverse("admin:files_file_browse", args=[project.id]),
            )
        return super().change_view(request, object_id, form_url, extra)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Project]:
        return super().get_queryset(request).annotate(recent_bandwidth=recent_bandwidth_subquery())

    @admin.display(description=f"Bandwidth, last {RECENT_DAYS} days", ordering="recent_bandwidth")
    def recent_bandwidth(self, obj: Project) -> str:
        return filesizeformat(getattr(obj, "recent_bandwidth", 0))

    def _usage(self, obj: Project) -> dict[str, ProjectUsage]:
        """Usage per mode, live first: test and live are separate data, counted apart.
        The change page shows three fields from one computation."""
        cached: dict[str, ProjectUsage] | None = getattr(obj, "_admin_usage", None)
        if cached is None:
            cached = {
                mode: project_usage(Tenant(project=obj, mode=mode))
                for mode in (ApiKey.Environment.LIVE, ApiKey.Environment.TEST)
            }
            obj._admin_usage = cached  # type: ignore[attr-defined]
        return cached

    @admin.display(description="Storage (bytes in the store; a shared copy counts once)")
    def storage(self, obj: Project) -> str:
        if obj._state.adding:
            return "-"
        return " · ".join(
            f"{mode}: {_bytes(usage.storage_bytes)} in {usage.stored_objects} object(s)"
            for mode, usage in self._usage(obj).items()
        )

    @admin.display(description="Bandwidth, all time")
    def bandwidth(self, obj: Project) -> str:
        if obj._state.adding:
            return "-"
        return " · ".join(
            f"{mode}: {_bytes(usage.bandwidth_bytes)} in {usage.downloads} download(s)"
            for mode, usage in self._usage(obj).items()
        )

    @admin.display(description=f"Bandwidth, last {RECENT_DAYS} days")
    def recent_bandwidth_detail(self, obj: Project) -> str:
        if obj._state.adding:
            return "-"
        return " · ".join(
            f"{mode}: {_bytes(usage.recent_bandwidth_bytes)} in {usage.recent_downloads}"
            " download(s)"
            for mode, usage in self._usage(obj).items()
        )


class ApiKeyAddForm(forms.ModelForm):
    restricted_scopes = forms.MultipleChoiceField(
        choices=[(name, f"{name}: {SCOPE_HELP[name]}") for name in SCOPES],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Scopes",
        help_text="None ticked: a full sk_ key (every scope). Any ticked: a restricted rk_ key "
        "holding only those, fixed for the key's life.",
    )

    class Meta:
        model = ApiKey
        fields = ("project", "environment", "name")


@admin.action(description="Revoke the selected keys now", permissions=["change"])
def revoke_keys(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
    modeladmin.message_user(request, f"Revoked {count} key(s).", messages.SUCCESS)


@admin.register(ApiKey)
class ApiKeyAdmin(ProjectScoped, StaffView, admin.ModelAdmin):
    """Staff issue a key with "Add": the full key is shown once, in the confirmation message."""

    list_display = (
        "prefix",
        "id",
        "project",
        "environment",
        "scope_list",
        "name",
        "created_at",
        "revoked_at",
    )
    list_filter = ("environment", ("revoked_at", admin.EmptyFieldListFilter))
    list_select_related = ("project",)
    search_fields = ("id", "prefix", "project__id", "project__name")
    actions = [revoke_keys]
    readonly_fields = (
        "id",
        "prefix",
        "project",
        "environment",
        "scope_list",
        "created_at",
        "revoked_at",
    )
    fields = (
        "id",
        "prefix",
        "project",
        "environment",
        "scope_list",
        "name",
        "created_at",
        "revoked_at",
    )

    @admin.display(description="Scopes")
    def scope_list(self, obj: ApiKey) -> str:
        # Read-only once issued: a key's scopes never widen.
        return "every scope (full key)" if obj.scopes is None else ", ".join(obj.scopes)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("project", "environment", "name", "restricted_scopes")
        return self.fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return () if obj is None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if not change:
            chosen = form.cleaned_data.get("restricted_scopes") or []
            obj.scopes = parse_scopes(chosen) if chosen else None
            raw_key = generate_key(obj.environment, restricted=obj.scopes is not None)
            obj.key_hash = hash_key(raw_key)
            obj.prefix = display_prefix(raw_key)
            super().save_model(request, obj, form, change)
            messages.warning(
                request,
                f"New API key (shown once; copy it now): {raw_key}",
            )
            return
        super().save_model(request, obj, form, change)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Keys are revoked, never deleted, so the record of who had access stays.
        return False


@admin.register(BandwidthUsage)
class BandwidthUsageAdmin(ProjectScoped, ReadOnlyAdmin):
    """Read-only: the rows are written by the download-url endpoints, one upsert each."""

    list_display = ("project", "mode", "day", "bytes", "downloads")
    list_filter = ("day",)
    search_fields = ("project__id", "project__name")
    ordering = ("-day", "project")
    list_select_related = ("project",)
    date_hierarchy = "day"


def _api_key_rows(project: Project) -> list[console.KeyRow]:
    return [
        console.KeyRow(
            id=key.id,
            label=key.prefix,
            mode=key.environment,
            name=key.name,
            created_at=key.created_at,
            revoked_at=key.revoked_at,
            url=reverse("admin:accounts_apikey_change", args=[quote(key.pk)]),
        )
        for key in ApiKey.objects.filter(project=project).order_by("-created_at")[:50]
    ]


def _api_key_issue(project: Project, mode: str, name: str) -> str:
    return api_key_issue(project=project, environment=mode, name=name).raw_key


def _api_key_revoke(project: Project, key_id: str) -> str:
    key = get_object_or_404(ApiKey, project=project, id=key_id)
    return api_key_revoke(key_id=key.id).environment


console.key_kind(
    console.KeyKind(
        slug="api",
        title="API keys",
        rows=_api_key_rows,
        issue=_api_key_issue,
        revoke=_api_key_revoke,
        add_permission="accounts.add_apikey",
        change_permission="accounts.change_apikey",
    )
)
