"""Which projects a staff user sees in the console: superusers every project; other staff only
the projects granted to them, directly or through a group (``Project.staff_users`` and
``Project.staff_groups``, which superusers set on the project's page).

Every admin page that shows a project's data mixes in ``ProjectScoped`` (or
``ProjectScopedInline``): its lists, search, actions, popups and autocomplete read only the
granted projects' rows, a project chooser offers only those projects, and a page of any other
row answers 404, as for a row that does not exist, so nothing tells staff that it does.
Django's model permissions still decide what staff may do with what they see.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse

from accounts.models import Project


def sees_every_project(user: Any) -> bool:
    return bool(user.is_active and user.is_superuser)


def granted_projects(user: Any) -> QuerySet[Project]:
    """The projects the user sees (every one for a superuser, none for anyone not staff)."""
    if sees_every_project(user):
        return Project.objects.all()
    if not (user.is_active and user.is_staff):
        return Project.objects.none()
    granted = Project.objects.filter(Q(staff_users=user) | Q(staff_groups__user=user))
    # As a subquery of ids: the joins through users and groups may name a project twice.
    return Project.objects.filter(id__in=granted.values("id"))


def may_see_project(user: Any, project_id: str | None) -> bool:
    if sees_every_project(user):
        return True
    return project_id is not None and granted_projects(user).filter(id=project_id).exists()


def scope_to_grants(rows: QuerySet, user: Any, project_path: str) -> QuerySet:
    """``rows`` cut to those of the user's projects; ``project_path`` is the lookup from a row
    to its project ("project", "file__project"; "pk" for projects themselves)."""
    if sees_every_project(user):
        return rows
    return rows.filter(**{f"{project_path}__in": granted_projects(user).values("id")})


def project_id_of(obj: Any, project_path: str) -> str | None:
    """The project id of one row, following ``project_path`` (the last step read as its
    ``_id`` column, so the project itself is not loaded)."""
    if project_path == "pk":
        return str(obj.pk)
    *steps, last = project_path.split("__")
    for step in steps:
        obj = getattr(obj, step, None)
        if obj is None:
            return None
    value = getattr(obj, f"{last}_id", None)
    return None if value is None else str(value)


class ProjectScopedInline:
    """Mix into an inline, before the Django base class: it lists the granted projects' rows
    only (an inline whose rows may belong to other projects than its page's)."""

    project_path = "project"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        rows = super().get_queryset(request)  # type: ignore[misc]
        return scope_to_grants(rows, request.user, self.project_path)


class ProjectScoped(ProjectScopedInline):
    """Mix into a ModelAdmin, before the Django base class (and StaffView)."""

    def _in_scope(self, request: HttpRequest, object_id: str) -> None:
        """404 for a row outside the user's projects, before Django's view reads it."""
        if sees_every_project(request.user):
            return
        try:
            found = self.get_queryset(request).filter(pk=unquote(object_id)).exists()
        except (ValueError, ValidationError):
            found = False
        if not found:
            raise Http404("No such object.")

    def _sees(self, request: HttpRequest, obj: Any) -> bool:
        return obj is None or may_see_project(request.user, project_id_of(obj, self.project_path))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_view_permission(request, obj)  # type: ignore[misc]
        return bool(allowed) and self._sees(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_change_permission(request, obj)  # type: ignore[misc]
        return bool(allowed) and self._sees(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_delete_permission(request, obj)  # type: ignore[misc]
        return bool(allowed) and self._sees(request, obj)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        """A project chooser (an API key's "Add" form) offers the user's projects only."""
        if db_field.related_model is Project:
            kwargs["queryset"] = granted_projects(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        self._in_scope(request, object_id)
        return super().change_view(request, object_id, form_url, extra_context)  # type: ignore[misc]

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        self._in_scope(request, object_id)
        return super().delete_view(request, object_id, extra_context)  # type: ignore[misc]

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        self._in_scope(request, object_id)
        return super().history_view(request, object_id, extra_context)  # type: ignore[misc]
