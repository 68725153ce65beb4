"""The tenant of a request: the API key resolved by authentication, its project and mode."""

from __future__ import annotations

from rest_framework.request import Request

from accounts.models import ApiKey
from accounts.tenancy import Tenant
from storage_service.errors import Unauthenticated


def api_key_of(request: Request) -> ApiKey:
    if not isinstance(request.auth, ApiKey):
        raise Unauthenticated("Send 'Authorization: Bearer <API key>'.")
    return request.auth


def tenant_of(request: Request) -> Tenant:
    api_key = api_key_of(request)
    return Tenant(project=api_key.project, mode=api_key.environment)
