"""Scopes: what a restricted key (``rk_test_…``/``rk_live_…``) may do.

Each operation declares the one scope it needs where its document is written, on the view
method's ``@extend_schema``::

    @extend_schema(tags=["files"], extensions=scope("files:read"), ...)

That puts ``x-required-scope`` (and the scope on the operation's security requirement) in
the OpenAPI document, and ``HasScope``, a default permission class, reads the same
declaration back from the view at request time: the document and the check cannot differ.
Permissions run after authentication and before throttling and the view, so a refused
request is answered 401 first (no key), then 403 ``INSUFFICIENT_SCOPE``, and nothing else
happens: no row, no event, no count against the key's rate limit.

A full key (``sk_``) holds every scope, including scopes added later (``ApiKey.scopes`` is
null). Scopes are independent: ``files:write`` does not imply ``files:read``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, get_args

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from accounts.grants import UploadGrant
from accounts.models import ApiKey
from storage_service.errors import SCOPE_EXTENSION, UPLOAD_TOKEN_EXTENSION, InsufficientScope

# Imported by DRF's settings (a default permission class) while DRF's views load: so nothing
# here imports drf-spectacular or the OpenAPI module, which import those views.
ScopeName = Literal["files:read", "files:write", "webhooks:read", "webhooks:write", "events:read"]
SCOPES: tuple[str, ...] = get_args(ScopeName)
# What each scope allows, for the admin, the command's help and docs/security.md.
SCOPE_HELP: dict[str, str] = {
    "files:read": "read files, folders, variants, jobs and multipart parts; download URLs",
    "files:write": "every other file, folder, batch, upload and transform operation",
    "webhooks:read": "list and read webhook endpoints and their deliveries",
    "webhooks:write": "create, delete, enable, redeliver, replay, rotate a secret",
    "events:read": "list and read events",
}


def scope(name: ScopeName | None, *, upload_token: bool = False) -> dict[str, Any]:
    """An operation's ``extensions``: the scope a key must hold to call it, or None for an
    operation every key may call (``GET /v1/me``). ``upload_token``: an upload token
    (``ut_…``) may call it too, on its own uploads (``x-upload-token`` in the document)."""
    if name is not None and name not in SCOPES:
        raise ValueError(f"unknown scope {name!r}")
    if upload_token:
        return {SCOPE_EXTENSION: name, UPLOAD_TOKEN_EXTENSION: True}
    return {SCOPE_EXTENSION: name}


def parse_scopes(values: Iterable[str]) -> list[str]:
    """Scopes as given at issue (``files:read,webhooks:read``): known, deduplicated, in the
    canonical order. An unknown scope is refused (ValueError), never dropped."""
    given = [value.strip() for value in values if value.strip()]
    unknown = sorted({value for value in given if value not in SCOPES})
    if unknown:
        raise ValueError(f"unknown scope(s) {', '.join(unknown)}; known: {', '.join(SCOPES)}")
    if not given:
        raise ValueError(f"name at least one scope of: {', '.join(SCOPES)}")
    return [name for name in SCOPES if name in given]


def scopes_of(api_key: ApiKey) -> list[str]:
    """The scopes a key holds: every scope for a full key."""
    return list(SCOPES) if api_key.scopes is None else list(api_key.scopes)


_UNDECLARED = object()
# (view class, handler name, method) -> the declared scope, None, or _UNDECLARED.
_declared: dict[tuple[type, str, str], object] = {}
# (view class, handler name, method) -> whether an upload token may call the handler.
_token_routes: dict[tuple[type, str, str], bool] = {}


def _extensions(view_class: type, handler_name: str, method: str) -> dict[str, Any] | None:
    """The handler's ``@extend_schema`` extensions (drf-spectacular keeps the declaration on
    the handler as its schema class), read on a bare view of the class; None when it has no
    schema of its own."""
    handler = getattr(view_class, handler_name, None)
    schema_class = getattr(handler, "kwargs", {}).get("schema")
    if schema_class is None:
        return None
    view = view_class()
    view.request, view.kwargs = None, {}  # what the schema's version check reads
    schema = schema_class()
    schema.view = view
    schema.method = method.upper()
    extensions: dict[str, Any] = schema.get_extensions() or {}
    return extensions


def token_allowed(view_class: type, handler_name: str, method: str) -> bool:
    """Whether the handler declares ``scope(..., upload_token=True)``. Read once per handler."""
    key = (view_class, handler_name, method.upper())
    if key not in _token_routes:
        extensions = _extensions(view_class, handler_name, method) or {}
        _token_routes[key] = extensions.get(UPLOAD_TOKEN_EXTENSION) is True
    return _token_routes[key]


def declared_scope(view_class: type, handler_name: str, method: str) -> object:
    """The scope the handler declares in its ``@extend_schema``: a scope, None (any key), or
    ``_UNDECLARED``. Read once per handler, on a bare view of the class."""
    key = (view_class, handler_name, method.upper())
    if key not in _declared:
        extensions = _extensions(view_class, handler_name, method)
        found: object = _UNDECLARED
        if extensions is not None and SCOPE_EXTENSION in extensions:
            found = extensions[SCOPE_EXTENSION]
        _declared[key] = found
    return _declared[key]


def check(api_key: ApiKey, view_class: type, handler_name: str, method: str) -> None:
    """Raise 403 ``INSUFFICIENT_SCOPE`` unless the key may call the handler. An operation
    that declares no scope is refused to every restricted key (the scope walk in the tests
    fails on it first)."""
    if api_key.scopes is None or method.upper() == "OPTIONS":
        # A full key holds every scope; OPTIONS describes a route and reads no tenant data.
        return
    needed = declared_scope(view_class, handler_name, method)
    if needed is None:
        return
    if needed is _UNDECLARED:
        raise InsufficientScope(
            "This operation declares no scope; only a full (sk_) key may call it.",
            details={"requiredScope": None},
        )
    if needed not in api_key.scopes:
        raise InsufficientScope(
            f"This key lacks the scope {needed}; use a key that holds it.",
            details={"requiredScope": needed},
        )


class HasScope(BasePermission):
    """403 ``INSUFFICIENT_SCOPE`` when the key lacks the operation's declared scope."""

    def has_permission(self, request: Request, view: Any) -> bool:
        api_key = request.auth
        if isinstance(api_key, UploadGrant):
            method = request.method or "GET"
            handler = getattr(view, "action", None) or method.lower()
            if method.upper() != "OPTIONS" and not token_allowed(type(view), handler, method):
                raise InsufficientScope(
                    "An upload token may only start uploads, work on the multipart uploads "
                    "it started and complete the files it started; use an API key.",
                    details={"requiredScope": None},
                )
            return True
        if not isinstance(api_key, ApiKey):
            return True  # no key: HasProject's 401 comes first
        method = request.method or "GET"
        check(api_key, type(view), getattr(view, "action", None) or method.lower(), method)
        return True
