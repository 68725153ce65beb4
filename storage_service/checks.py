"""System checks for what settings.ADMIN_MIDDLEWARE moved out of MIDDLEWARE (issue 14).

Django's own checks (admin.E408-E410: the admin needs sessions, authentication and messages;
security.W003: CSRF protection) look in MIDDLEWARE only, so the settings silence them and
these make the same demands of ADMIN_MIDDLEWARE, which AdminStackMiddleware runs for every
path but the API's.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, register

REQUIRED = {
    "django.contrib.sessions.middleware.SessionMiddleware": "admin.E410",
    "django.contrib.auth.middleware.AuthenticationMiddleware": "admin.E408",
    "django.contrib.messages.middleware.MessageMiddleware": "admin.E409",
    "django.middleware.csrf.CsrfViewMiddleware": "security.W003",
}
STACK = "storage_service.middleware.AdminStackMiddleware"


@register()
def admin_middleware(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors = []
    if STACK not in settings.MIDDLEWARE:
        errors.append(Error(f"{STACK} must be in MIDDLEWARE.", id="storage_service.E001"))
    stack = list(getattr(settings, "ADMIN_MIDDLEWARE", []))
    for path, replaces in REQUIRED.items():
        if path not in stack:
            errors.append(
                Error(
                    f"{path} must be in ADMIN_MIDDLEWARE (Django's {replaces}, which looks in "
                    "MIDDLEWARE, is silenced).",
                    id="storage_service.E002",
                )
            )
    return errors
