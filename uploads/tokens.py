"""Upload tokens: minting, reading and revoking them (their use is uploads/auth.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.grants import UploadGrant
from accounts.keys import hash_key
from accounts.tenancy import Tenant
from storage_service.errors import UploadNotFound, UploadTokenNotFound
from storage_service.lookups import found_by_id
from uploads.auth import generate_token
from uploads.models import UploadSession, UploadToken, UploadTokenQuerySet


@dataclass(frozen=True)
class MintedToken:
    upload_token: UploadToken
    token: str  # ut_…, shown once


def upload_token_create(
    *,
    tenant: Tenant,
    path: str | None = None,
    max_file_size_bytes: int | None = None,
    allowed_content_types: list[str] | None = None,
    max_files: int = 1,
    expires_in_seconds: int = 900,
    metadata: dict[str, Any] | None = None,
    allowed_origins: list[str] | None = None,
) -> MintedToken:
    """Mint a token; only its keyed hash is kept, so this answer is the only time it exists."""
    raw = generate_token()
    token = UploadToken.objects.create(
        **tenant.owner(),
        token_hash=hash_key(raw),
        path=path,
        max_file_size_bytes=max_file_size_bytes,
        allowed_content_types=allowed_content_types,
        max_files=max_files,
        metadata=metadata,
        allowed_origins=allowed_origins,
        expires_at=timezone.now() + timedelta(seconds=expires_in_seconds),
    )
    return MintedToken(upload_token=token, token=raw)


def upload_token_queryset(*, tenant: Tenant) -> UploadTokenQuerySet:
    return UploadToken.objects.for_tenant(tenant)


def upload_token_get(*, tenant: Tenant, token_id: str) -> UploadToken:
    """A token of the tenant; unknown and foreign ids are the same 404."""
    return found_by_id(
        UploadToken.objects.for_tenant(tenant),
        token_id,
        prefix="utk",
        missing=UploadTokenNotFound,
        message="No such upload token.",
    )


def upload_token_revoke(*, tenant: Tenant, token_id: str) -> UploadToken:
    """Revoke a token: it stops working at once (a start racing this either counted before
    it, or is refused). Revoking a revoked token succeeds and changes nothing; uploads it
    already started may still be completed by the application's server with its key."""
    with transaction.atomic():
        token = found_by_id(
            UploadToken.objects.for_tenant(tenant).select_for_update(),
            token_id,
            prefix="utk",
            missing=UploadTokenNotFound,
            message="No such upload token.",
        )
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
    return token


def session_owned(grant: UploadGrant | None, upload_id: str) -> None:
    """A multipart session another token or a key started answers as missing (404) to a
    token; with a key, nothing to check."""
    if grant is None:
        return
    owned = (
        UploadSession.objects.for_tenant(grant.tenant)
        .filter(id=upload_id, file__upload_token_id=grant.token_id)
        .exists()
    )
    if not owned:
        raise UploadNotFound("No such upload.")
