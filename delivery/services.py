"""Delivery keys (issue, revoke) and the signing of delivery URLs by the API."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Project
from accounts.tenancy import Tenant
from delivery import signing
from delivery.models import DeliveryKey
from delivery.secret import new_salt, secret_of
from delivery.selectors import delivery_key_get
from events.changes import announce_after_commit
from files.models import File, FileVersion
from files.selectors import file_get
from storage_service.errors import (
    DeliveryKeyLimitReached,
    DeliveryKeyNotFound,
    FileNotUploaded,
    NoDeliveryKey,
    ValidationError,
)
from variants.services import check_processable

MAX_ACTIVE_KEYS = 10


@dataclass(frozen=True)
class IssuedDeliveryKey:
    key: DeliveryKey
    secret: str  # shown once; derived again only to check signatures


def delivery_key_create(*, tenant: Tenant) -> IssuedDeliveryKey:
    """Issue a key.

    1. Lock the project row, then count the tenant's active keys: two requests racing for
       the tenth place queue on the lock, and the second sees ten and is refused.
    2. Create the key with a new salt; its secret is derived from it (delivery/secret.py).
    """
    with transaction.atomic():
        Project.objects.select_for_update().filter(id=tenant.project_id).values_list("id").get()
        if DeliveryKey.objects.for_tenant(tenant).active().count() >= MAX_ACTIVE_KEYS:
            raise DeliveryKeyLimitReached(
                f"A project has at most {MAX_ACTIVE_KEYS} active delivery keys in each mode; "
                "revoke one first.",
                details={"limit": MAX_ACTIVE_KEYS},
            )
        key = DeliveryKey.objects.create(**tenant.owner(), salt=new_salt())
    return IssuedDeliveryKey(key=key, secret=secret_of(key_id=key.id, salt=key.salt))


def delivery_key_revoke(*, tenant: Tenant, key_id: str) -> DeliveryKey:
    """Revoke at once: resolving reads the key, or forgets it on the revocation's
    announcement (delivery/remembered.py). Revoking a revoked key
    keeps its first revocation time."""
    with transaction.atomic():
        key = delivery_key_get(tenant=tenant, key_id=key_id, for_update=True)
        _revoke(key)
        return key


def delivery_key_revoke_by_id(*, key_id: str) -> DeliveryKey:
    """The operators' revocation (manage.py revoke_delivery_key): any tenant's key."""
    with transaction.atomic():
        key = DeliveryKey.objects.select_for_update().get(id=key_id)
        _revoke(key)
        return key


def _revoke(key: DeliveryKey) -> None:
    """Inside the caller's transaction, holding the key's row. The servers that keep
    resolution rows forget the project's once it commits (delivery/remembered.py)."""
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        announce_after_commit(key.project_id)


def delivery_key_issue_for(*, project: Project, mode: str) -> IssuedDeliveryKey:
    """The operators' issue (manage.py issue_delivery_key), under the same cap."""
    return delivery_key_create(tenant=Tenant(project=project, mode=mode))


@dataclass(frozen=True)
class SignedUrl:
    url: str
    expires_at: datetime | None


def base_url(request_base: str) -> str:
    """Where delivery URLs live: SERVICE_DELIVERY_BASE_URL when operators serve delivery
    apart, else the API's own host."""
    return (settings.SERVICE_DELIVERY_BASE_URL or request_base).rstrip("/")


def delivery_url_sign(
    *,
    tenant: Tenant,
    file_id: str,
    transform: dict[str, Any] | None,
    version: int | None,
    expires_in: int | None,
    key_id: str | None,
    request_base: str,
) -> SignedUrl:
    """Sign a delivery URL as a client holding the key would (delivery/signing.py).

    1. The file: the tenant's, visible (404), uploaded (409); a pinned version it published
       (400); an eligible image when a transform is asked (422).
    2. The key: the one named (404 unless active and the tenant's), else the newest active
       one (409 NO_DELIVERY_KEY when there is none).
    """
    file = file_get(tenant=tenant, file_id=file_id)
    if file.status != File.Status.UPLOADED:
        raise FileNotUploaded(f"The file is {file.status}; only an uploaded file is delivered.")
    sniffed_type, size = file.sniffed_type, file.size
    if version is not None and version != file.version:
        published = (
            FileVersion.objects.select_related("stored_object")
            .filter(file=file, version=version)
            .first()
        )
        if published is None:
            raise ValidationError(
                f"The file never had version {version}.",
                details={"version": [f"The file's versions are 1 to {file.version}."]},
            )
        sniffed_type, size = published.stored_object.sniffed_type, published.size
    if transform:
        check_processable(sniffed_type=sniffed_type, size=size)
    if key_id is not None:
        key = delivery_key_get(tenant=tenant, key_id=key_id)
        if not key.is_active:
            raise DeliveryKeyNotFound("The delivery key is revoked.")
    else:
        newest = DeliveryKey.objects.for_tenant(tenant).active().order_by("-id").first()
        if newest is None:
            raise NoDeliveryKey(
                "The project has no active delivery key in this mode; create one with "
                "POST /v1/delivery-keys."
            )
        key = newest
    # Whole seconds: the URL carries the expiry as Unix seconds.
    expires = None if expires_in is None else int(time.time()) + expires_in
    options = signing.Options(**(transform or {}), version=version, expires=expires)
    path = signing.delivery_path(secret_of(key_id=key.id, salt=key.salt), key.id, file.id, options)
    expires_at = None if expires is None else datetime.fromtimestamp(expires, UTC)
    return SignedUrl(url=base_url(request_base) + path, expires_at=expires_at)
