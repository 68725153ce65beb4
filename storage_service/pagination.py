"""The one pagination of every list: keyset pages, whose cost never grows with their depth.

A page is ``WHERE (sort, id) > (value, id)`` (``<`` when descending) ``ORDER BY sort, id
LIMIT n + 1``: an index range scan that starts where the last page ended, unlike OFFSET,
which reads and throws away every earlier row. The extra row says whether there are more.

The cursor is an opaque token signed with the secret key (``django.core.signing``): the
scope it belongs to (the list and its order), and the last row's sort value and id. A
tampered cursor, or one from another list or order, is a 400.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from django.core import signing
from django.db.models import Q, QuerySet
from rest_framework import pagination, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from storage_service.errors import ValidationError
from storage_service.openapi import shape_ref, shape_schema
from storage_service.serializers import clean_cursor, json_schema, query_int
from storage_service.shapes import Paged, PaginationJson

_SALT = "storage_service.pagination.cursor"
Item = TypeVar("Item")


def encode_cursor(scope: str, value: Any, row_id: Any) -> str:
    if isinstance(value, datetime):
        value = {"dt": value.isoformat()}  # microseconds kept: the cursor must be exact
    return signing.dumps({"s": scope, "v": value, "i": row_id}, salt=_SALT, compress=True)


def decode_cursor(cursor: str, scope: str) -> tuple[Any, Any]:
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


_LIMIT = query_int(1, 100)


class CursorPagination(pagination.CursorPagination):
    """Keyset pages in the view's ``ordering``, answered as ``{"data", "pagination"}``.

    The view gives, as DRF's cursor pagination reads them from its own configuration:

    - ``ordering``, the keyset the page is ordered by: ``(sort, id)``, both one way
      (``("-created_at", "-id")``), or one unique key (``("name",)``); the paginator orders
      the queryset by it, so the order and the cursor's keys cannot differ;
    - ``cursor_scope``, what its cursors belong to (``"files:createdAt:desc"``): a cursor
      from another scope is refused rather than starting a page in the wrong place.

    A view may set ``page_size`` (the default ``limit``) and, where a page needs its own
    plan or columns, ``page_rows(queryset, count)`` (files/views.py).
    """

    envelope = Paged  # the answer's shape, and the one its pagination object has
    pagination_shape = PaginationJson
    page_size = 20
    max_page_size = 100
    page_size_query_param = "limit"
    cursor_query_param = "cursor"

    def paginate_queryset(
        self, queryset: QuerySet[Any], request: Request, view: Any = None
    ) -> list[Any]:
        self.request = request
        errors = self.query_errors(request)
        if errors:
            raise serializers.ValidationError(errors)
        params = request.query_params
        limit = params.get(self.page_size_query_param)
        self.limit = _LIMIT(limit) if limit is not None else self._default_size(view)
        cursor = params.get(self.cursor_query_param)
        ordering = self.get_ordering(request, queryset, view)
        self.keys = keyset(ordering)
        self.scope: str = view.cursor_scope
        queryset = queryset.order_by(*ordering)
        if cursor:
            value, row_id = decode_cursor(cursor, self.scope)
            queryset = self._after(queryset, value, row_id)
        page_rows = getattr(view, "page_rows", None)
        count = self.limit + 1
        rows = list(page_rows(queryset, count) if page_rows else queryset[:count])
        self.has_more = len(rows) > self.limit
        rows = rows[: self.limit]
        self.next_cursor = None
        if self.has_more and rows:
            sort, tiebreak = self.keys
            self.next_cursor = encode_cursor(
                self.scope, _value(rows[-1], sort.lstrip("-")), _value(rows[-1], tiebreak)
            )
        return rows

    def query_errors(self, request: Request) -> dict[str, list[str]]:
        """What is wrong with the ``limit`` and ``cursor`` parameters, by name."""
        errors = {}
        for name, clean in (
            (self.page_size_query_param, _LIMIT),
            (self.cursor_query_param, clean_cursor),
        ):
            value = request.query_params.get(name)
            if value is None:
                continue
            try:
                clean(value)
            except serializers.ValidationError as exc:
                errors[name] = [str(message) for message in exc.detail]
        return errors

    def get_ordering(self, request: Request, queryset: QuerySet[Any], view: Any) -> tuple[str, ...]:
        """The view's keyset order (its ``ordering``)."""
        return tuple(view.ordering)

    def _default_size(self, view: Any) -> int:
        return int(getattr(view, "page_size", self.page_size))

    def _after(self, queryset: QuerySet[Any], value: Any, row_id: Any) -> QuerySet[Any]:
        """The rows after the one with sort value ``value`` and tie-break ``row_id``."""
        sort, tiebreak = self.keys
        descending = sort.startswith("-")
        field = sort.lstrip("-")
        if field == tiebreak:  # one unique key: the cursor's id is its value
            return queryset.filter(**{f"{field}__{'lt' if descending else 'gt'}": row_id})
        # ``sort <= value`` (``>=`` ascending) bounds the index range scan where the last page
        # ended; the rows of the same sort value are then told apart by the tie-break.
        before, at_or_before = ("lt", "lte") if descending else ("gt", "gte")
        return queryset.filter(
            Q(**{f"{field}__{at_or_before}": value})
            & (Q(**{f"{field}__{before}": value}) | Q(**{f"{tiebreak}__{before}": row_id}))
        )

    def get_paginated_response(self, data: Any) -> Response:
        body: Paged[Any] = {"data": data, "pagination": self.pagination_json()}
        return Response(body)

    def pagination_json(self) -> PaginationJson:
        return {"hasMore": self.has_more, "nextCursor": self.next_cursor}

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        paged = shape_schema(self.envelope[Any], shape_ref)
        paged["properties"]["data"] = schema
        return paged

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        limit = {**json_schema(_LIMIT), "default": self._default_size(view)}
        return [
            {"in": "query", "name": self.page_size_query_param, "schema": limit},
            {"in": "query", "name": self.cursor_query_param, "schema": json_schema(clean_cursor)},
        ]


def keyset(ordering: Sequence[str]) -> tuple[str, str]:
    """The keys of a keyset order: ``(sort, tie-break)``, each a field name, the sort with
    ``-`` when descending."""
    if len(ordering) not in (1, 2):
        raise TypeError(f"a keyset page needs ordering (sort, id) or one unique key: {ordering!r}")
    if len(ordering) == 1:
        return ordering[0], ordering[0].lstrip("-")
    sort, tiebreak = ordering
    if sort.startswith("-") != tiebreak.startswith("-"):
        raise TypeError(f"both keys of a keyset page go one way: {ordering!r}")
    return sort, tiebreak.lstrip("-")


def _value(row: Any, name: str) -> Any:
    return row[name] if isinstance(row, dict) else getattr(row, name)
