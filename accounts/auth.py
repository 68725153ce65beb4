"""Bearer API-key authentication: every request resolves to exactly one project."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import Throttled
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from accounts.context import api_key_of
from accounts.models import ApiKey
from accounts.selectors import api_key_resolve
from accounts.throttling import refusal_wait
from storage_service.errors import Unauthenticated


def bearer_token(request: Request) -> str | None:
    """The raw key of ``Authorization: Bearer <key>``; None without the header."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("The Authorization header must be 'Bearer <API key>'.")
    return token.strip()


UNKNOWN_KEY = "The API key is unknown or has been revoked."


def well_formed_bearer(request: HttpRequest) -> str | None:
    """The raw key of a well-formed ``Authorization: Bearer <key>`` header, else None (for
    a fast lane, which leaves every refusal to the DRF view: storage_service/fastlane.py)."""
    try:
        return bearer_token(request)  # type: ignore[arg-type]  # reads only META
    except Unauthenticated:
        return None


def admit(request: HttpRequest, api_key: ApiKey) -> None:
    """What DRF's authentication and throttling do, for a fast lane that resolved the key
    itself: the request is the key's (the request log names its project and prefix), and
    it is counted against the key's budget, or refused with 429 RATE_LIMITED."""
    request.auth = api_key  # type: ignore[attr-defined]
    request.user = api_key  # type: ignore[assignment]
    wait = refusal_wait(api_key, request.method or "GET")
    if wait is not None:
        raise Throttled(wait=wait)


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        token = bearer_token(request)
        if token is None:
            return None
        api_key = api_key_resolve(raw_key=token)
        if api_key is None:
            raise Unauthenticated(UNKNOWN_KEY)
        # request.user is the key itself: the API has no human users, only project keys.
        return api_key, api_key

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"


class HasProject(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        api_key_of(request)  # raises 401 when no key was sent
        return True
