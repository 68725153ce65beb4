"""A row by its public id, or the 404 of its kind: the one rule every lookup by an id from a
request follows. A malformed id is refused without a query (``looks_like_id``), and the
queryset is the tenant's, so another tenant's id is as unknown as one that never existed."""

from __future__ import annotations

from typing import TypeVar

from django.db.models import Model, QuerySet

from storage_service.errors import ApiError
from storage_service.ids import looks_like_id

ModelT = TypeVar("ModelT", bound=Model)


def found_by_id(
    queryset: QuerySet[ModelT],
    object_id: str,
    *,
    prefix: str,
    missing: type[ApiError],
    message: str,
) -> ModelT:
    """The row of ``queryset`` whose id is ``object_id`` (``<prefix>_…``); else
    ``missing(message)``."""
    found = queryset.filter(id=object_id).first() if looks_like_id(object_id, prefix) else None
    if found is None:
        raise missing(message)
    return found
