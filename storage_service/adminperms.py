"""Who may do what in the admin: staff look; only superusers change.

Operators are staff users. Django's default would show a staff user only the models they
hold a "view" permission for, one grant per model; here being staff is the grant to look
(the admin site itself already turns away anyone not active and staff), at the projects
granted to them (accounts/staffaccess.py: superusers see every project, other staff only
theirs). Changes a service makes (delete/restore a file, redeliver, revoke or issue a key)
stay with superusers, or with users given the model's permissions explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest

from storage_service.errors import ApiError


def is_staff(request: HttpRequest) -> bool:
    user = request.user
    return bool(user.is_active and user.is_staff)


class StaffView:
    """Mix into a ModelAdmin or an inline, before the Django base class."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_staff(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)


class SuperuserActions:
    """Actions marked ``allowed_permissions=("operate",)`` are for superusers only."""

    def has_operate_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)


class ReadOnlyAdmin(StaffView, SuperuserActions, admin.ModelAdmin):
    """Rows written only by the service: staff may look, not add, edit or delete."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(StaffView, admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def each_through_service(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    rows: Iterable[Any],
    call: Callable[[Any], object],
    done: str,
) -> None:
    """An admin action that changes rows through the API's own service, one call per row: a
    refusal (the API's ApiError) is reported with its reason and the other rows go on.
    ``done`` is the success message, with ``{count}`` for the rows changed."""
    count, refused = 0, []
    for row in rows:
        try:
            call(row)
        except ApiError as exc:
            refused.append(f"{row.pk}: {exc.message}")
        else:
            count += 1
    modeladmin.message_user(request, done.format(count=count), messages.SUCCESS)
    for reason in refused:
        modeladmin.message_user(request, reason, messages.WARNING)
