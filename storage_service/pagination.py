"""Keyset (cursor) pagination: the cost of a page never grows with its depth.

A cursor is an opaque, signed token holding the sort it belongs to and the last row's sort
value and id. The next page is ``WHERE (sort, id) > (value, id)`` (or ``<`` when descending)
``ORDER BY sort, id LIMIT n + 1``: an index range scan that starts where the last page ended,
unlike OFFSET, which reads and throws away every earlier row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypedDict, TypeVar

from django.core import signing
from django.db.models import Model, QuerySet

from storage_service.errors import ValidationError

T = TypeVar("T", bound=Model)
Item = TypeVar("Item")

_SALT = "storage_service.pagination.cursor"


class PaginationJson(TypedDict):
    """Whether there are more rows, and the cursor that asks for them (null when there are
    none): pass it back unchanged as ``cursor``."""

    hasMore: bool
    nextCursor: str | None


@dataclass(frozen=True)
class Page(Generic[Item]):
    items: list[Item]
    has_more: bool
    next_cursor: str | None

    def pagination_json(self) -> PaginationJson:
        return {"hasMore": self.has_more, "nextCursor": self.next_cursor}


def encode_cursor(scope: str, value: Any, row_id: str) -> str:
    if isinstance(value, datetime):
        value = {"dt": value.isoformat()}  # microseconds kept: the cursor must be exact
    return signing.dumps({"s": scope, "v": value, "i": row_id}, salt=_SALT, compress=True)


def decode_cursor(cursor: str, scope: str) -> tuple[Any, str]:
    try:
        payload = signing.loads(cursor, salt=_SALT)
    except signing.BadSignature as exc:
        raise ValidationError(
            "The cursor is invalid; pass nextCursor back unchanged.",
            details={"cursor": ["Invalid cursor."]},
        ) from exc
    if not isinstance(payload, dict) or payload.get("s") != scope:
        raise ValidationError(
            "The cursor belongs to another sort order; start again without a cursor.",
            details={"cursor": ["Cursor does not match sortBy/order."]},
        )
    value = payload.get("v")
    if isinstance(value, dict) and "dt" in value:
        value = datetime.fromisoformat(value["dt"])
    row_id = payload.get("i")
    if not isinstance(row_id, str):
        raise ValidationError("The cursor is invalid.", details={"cursor": ["Invalid cursor."]})
    return value, row_id


@dataclass(frozen=True)
class Keyset:
    """One keyset ordering: by ``field`` (SQL ``column``), then by id, in one direction."""

    field: str
    column: str
    descending: bool
    scope: str  # what a cursor must belong to, e.g. "files:createdAt:desc"

    @property
    def sql_order(self) -> str:
        return "DESC" if self.descending else "ASC"

    def order_by(self) -> tuple[str, str]:
        prefix = "-" if self.descending else ""
        return f"{prefix}{self.field}", f"{prefix}id"

    def after(self, queryset: QuerySet[T], cursor: str | None) -> QuerySet[T]:
        """The rows after ``cursor`` (all rows without one).

        The row comparison ``(col, id) < (%s, %s)`` is written in SQL because PostgreSQL
        turns it into one index range condition, where the equivalent
        ``a < x OR (a = x AND id < y)`` is only a filter.
        """
        if not cursor:
            return queryset
        return self.after_row(queryset, *decode_cursor(cursor, self.scope))

    def after_row(self, queryset: QuerySet[T], value: Any, row_id: Any) -> QuerySet[T]:
        """The rows after the row with sort value ``value`` and id ``row_id``."""
        table = queryset.model._meta.db_table
        op = "<" if self.descending else ">"
        return queryset.extra(
            where=[f'("{table}"."{self.column}", "{table}"."id") {op} (%s, %s)'],
            params=[value, row_id],
        )

    def page(self, rows: list[Item], limit: int) -> Page[Item]:
        """A page from up to ``limit + 1`` rows in this order (the extra row means more): model
        instances, or anything with their ``pk`` and sort attribute."""
        has_more = len(rows) > limit
        items = rows[:limit]
        next_cursor = None
        if has_more and items:
            last: Any = items[-1]
            next_cursor = encode_cursor(self.scope, getattr(last, self.field), str(last.pk))
        return Page(items=items, has_more=has_more, next_cursor=next_cursor)
