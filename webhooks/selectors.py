"""Read queries of the webhooks app, each scoped to the tenant (project and mode) of the API key."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.tenancy import Tenant
from storage_service.errors import WebhookNotFound
from storage_service.lookups import found_by_id
from webhooks.models import Delivery, Endpoint


def endpoint_get(*, tenant: Tenant, webhook_id: str) -> Endpoint:
    """One endpoint of the tenant; another tenant's answers as a missing one."""
    return found_by_id(
        Endpoint.objects.for_tenant(tenant),
        webhook_id,
        prefix="wh",
        missing=WebhookNotFound,
        message="No such webhook endpoint.",
    )


def endpoint_list(*, tenant: Tenant) -> list[Endpoint]:
    """At most 20 rows: no paging needed. Newest first."""
    return list(Endpoint.objects.for_tenant(tenant).order_by("-created_at", "-id"))


def deliveries_of(deliveries: QuerySet[Delivery], *, endpoint: Endpoint) -> QuerySet[Delivery]:
    """The endpoint's deliveries among ``deliveries`` (served by the ``delivery_endpoint_id``
    index), each with its event's type and time: the log shows those, not the payload."""
    return deliveries.filter(endpoint=endpoint).select_related("event").defer("event__data")
