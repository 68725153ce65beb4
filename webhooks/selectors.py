"""Read queries of the webhooks app, each scoped to the tenant (project and mode) of the API key."""

from __future__ import annotations

from accounts.tenancy import Tenant
from storage_service.pagination import Page, decode_cursor, encode_cursor
from webhooks.models import Delivery, Endpoint

_DELIVERY_SCOPE = "deliveries"


def endpoint_list(*, tenant: Tenant) -> list[Endpoint]:
    """At most 20 rows: no paging needed. Newest first."""
    return list(Endpoint.objects.for_tenant(tenant).order_by("-created_at", "-id"))


def delivery_list(*, endpoint: Endpoint, limit: int, cursor: str | None) -> Page[Delivery]:
    """The endpoint's deliveries, newest first, by id (ids are time-ordered), keyset-paged
    on the ``delivery_endpoint_id`` index."""
    rows = (
        Delivery.objects.filter(endpoint=endpoint)
        .select_related("event")
        .defer("event__data")  # the log shows the event's type and time, not its payload
        .order_by("-id")
    )
    if cursor is not None:
        _, last_id = decode_cursor(cursor, _DELIVERY_SCOPE)
        rows = rows.filter(id__lt=last_id)
    items = list(rows[: limit + 1])
    has_more = len(items) > limit
    items = items[:limit]
    next_cursor = encode_cursor(_DELIVERY_SCOPE, None, items[-1].id) if has_more else None
    return Page(items=items, has_more=has_more, next_cursor=next_cursor)
