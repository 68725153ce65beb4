"""The tenant of a request: the API key resolved by authentication, its project and mode."""

from __future__ import annotations

from rest_framework.request import Request

from accounts.grants import UploadGrant
from accounts.models import ApiKey
from accounts.tenancy import Tenant
from storage_service.errors import Unauthenticated


def api_key_of(request: Request) -> ApiKey:
    if not isinstance(request.auth, ApiKey):
        raise Unauthenticated("Send 'Authorization: Bearer <API key>'.")
    return request.auth


def tenant_of(request: Request) -> Tenant:
    if isinstance(request.auth, UploadGrant):
        # Only the routes a token may call get here (accounts.scopes refuses the others).
        return request.auth.tenant
    api_key = api_key_of(request)
    return Tenant(project=api_key.project, mode=api_key.environment)


def upload_grant_of(request: Request) -> UploadGrant | None:
    """The upload token's grant when the request was made with one; None with an API key."""
    return request.auth if isinstance(request.auth, UploadGrant) else None
