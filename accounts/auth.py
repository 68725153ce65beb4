"""Bearer API-key authentication: every request resolves to exactly one project."""

from __future__ import annotations

from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from accounts.context import api_key_of
from accounts.grants import UploadGrant
from accounts.models import ApiKey
from accounts.selectors import api_key_resolve
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
        if isinstance(request.auth, UploadGrant):
            return True  # an upload token's project; HasScope bounds its routes
        api_key_of(request)  # raises 401 when no key was sent
        return True
