"""The envelopes every app's responses share, and the shared field types.

Each app's own objects are TypedDicts in its ``shapes.py``; see storage_service/openapi/ for
how one definition becomes the response, the type check and the document.
"""

from __future__ import annotations

from typing import Annotated, Generic, TypedDict, TypeVar

from storage_service.openapi import JsonSchema

T = TypeVar("T")
Item = TypeVar("Item")

Timestamp = Annotated[
    str,
    JsonSchema(
        format="date-time",
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$",
        example="2026-11-22T03:55:04.086Z",
    ),
]
Url = Annotated[str, JsonSchema(format="uri")]


class Data(TypedDict, Generic[T]):
    """The contract's ``{"data": ...}`` envelope."""

    data: T


class PaginationJson(TypedDict):
    """Whether there are more rows, and the cursor that asks for them (null when there are
    none): pass it back unchanged as ``cursor``."""

    hasMore: bool
    nextCursor: str | None


class Paged(TypedDict, Generic[T]):
    """A keyset page: the items, and how to ask for the next page."""

    data: list[T]
    pagination: PaginationJson
