"""The tenant of a request: the API key resolved by authentication, and its project."""

from __future__ import annotations

from rest_framework.request import Request

from accounts.models import ApiKey, Project
from storage_service.errors import Unauthenticated


def api_key_of(request: Request) -> ApiKey:
    if not isinstance(request.auth, ApiKey):
        raise Unauthenticated("Send 'Authorization: Bearer <API key>'.")
    return request.auth


def project_of(request: Request) -> Project:
    return api_key_of(request).project
