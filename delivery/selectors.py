"""Read queries of the delivery app."""

from __future__ import annotations

from accounts.tenancy import Tenant
from delivery.models import DeliveryKey
from storage_service.errors import DeliveryKeyNotFound
from storage_service.ids import looks_like_id


def delivery_key_get(*, tenant: Tenant, key_id: str, for_update: bool = False) -> DeliveryKey:
    """One of the tenant's keys, active or revoked; 404 for any other id."""
    key = None
    if looks_like_id(key_id, "dk"):
        keys = DeliveryKey.objects.for_tenant(tenant)
        if for_update:
            keys = keys.select_for_update()
        key = keys.filter(id=key_id).first()
    if key is None:
        raise DeliveryKeyNotFound("No such delivery key.")
    return key


def delivery_key_list(*, tenant: Tenant) -> list[DeliveryKey]:
    """The tenant's keys, newest first: the active ones (at most ten) and the revoked."""
    return list(DeliveryKey.objects.for_tenant(tenant).order_by("-id"))
