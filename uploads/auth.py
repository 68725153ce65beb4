"""Upload tokens as bearer credentials: ``Authorization: Bearer ut_…``.

A default DRF authentication class, listed before the API-key one: it answers only for
``ut_`` tokens and leaves every other credential to ``accounts.auth``. A token resolves to
an ``UploadGrant`` (accounts/grants.py) as ``request.auth``; ``accounts.scopes.HasScope``
then lets it call only the operations declared ``scope(..., upload_token=True)``.

Imported by DRF's settings while DRF's views load: nothing here imports a view, drf-spectacular
or the OpenAPI module.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.db.models import F
from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from accounts.auth import bearer_token
from accounts.grants import UploadGrant
from accounts.keys import hash_key
from accounts.tenancy import Tenant
from storage_service.errors import OriginNotAllowed, Unauthenticated, UploadTokenExhausted
from uploads.models import UploadToken

TOKEN_PREFIX = "ut_"


def generate_token() -> str:
    """``ut_`` and 256 random bits, base64url: as unguessable as an API key."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_claim(token_id: str) -> None:
    """Count one started file: a conditional UPDATE, so of any number of parallel starts
    exactly ``max_files`` succeed (each waits for the row lock of the one before it and
    re-reads the count). Inside the start's transaction: a start that fails later counts
    nothing."""
    counted = (
        UploadToken.objects.filter(
            id=token_id, revoked_at__isnull=True, files_started__lt=F("max_files")
        ).update(files_started=F("files_started") + 1)
        == 1
    )
    if counted:
        return
    revoked = UploadToken.objects.filter(id=token_id, revoked_at__isnull=False).exists()
    if revoked:
        raise Unauthenticated("The upload token has been revoked.")
    raise UploadTokenExhausted(
        "This upload token has started every file it allows (maxFiles).",
    )


def token_has_room(token_id: str) -> None:
    """Refuse (403 UPLOAD_TOKEN_EXHAUSTED) a token with no file left, before a start does
    any work; only ``token_claim`` counts, exactly."""
    if not UploadToken.objects.filter(id=token_id, files_started__lt=F("max_files")).exists():
        raise UploadTokenExhausted("This upload token has started every file it allows.")


def grant_of(token: UploadToken) -> UploadGrant:
    return UploadGrant(
        token_id=token.id,
        tenant=Tenant(project=token.project, mode=token.mode),
        path=token.path,
        max_file_size_bytes=token.max_file_size_bytes,
        allowed_content_types=token.allowed_content_types,
        metadata=token.metadata,
        claim=lambda: token_claim(token.id),
    )


def token_types(*, token_id: str) -> list[str] | None:
    """files' ``upload_token_types`` hook (registered in UploadsConfig.ready)."""
    types: list[str] | None = (
        UploadToken.objects.filter(id=token_id)
        .values_list("allowed_content_types", flat=True)
        .first()
    )
    return types


class UploadTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, UploadGrant] | None:
        raw = bearer_token(request)
        if raw is None or not raw.startswith(TOKEN_PREFIX):
            return None  # an API key, or nothing: accounts.auth answers
        token = (
            UploadToken.objects.select_related("project")
            .filter(
                token_hash=hash_key(raw), revoked_at__isnull=True, expires_at__gt=timezone.now()
            )
            .first()
        )
        if token is None:
            raise Unauthenticated("The upload token is unknown, expired or revoked.")
        origin = request.META.get("HTTP_ORIGIN")
        if token.allowed_origins and origin not in token.allowed_origins:
            # A browser always sends its page's Origin on these requests; without one, or
            # with another, the token was carried off its pages.
            raise OriginNotAllowed(
                f"This upload token is not valid from the origin {origin or '(none)'}.",
                details={"allowedOrigins": token.allowed_origins},
            )
        # request.user stays None: the API has no human users.
        return None, grant_of(token)

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
