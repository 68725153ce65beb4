"""A listed file's timestamps: the API's form (milliseconds cut, never rounded, ``Z``), the
same as GET shows, and exact to the microsecond in the cursor that pages past them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from files.models import File
from tests.factories import Actor
from tests.helpers import start_upload

# Three instants within one millisecond, one on a whole second (no microseconds), one a
# microsecond short of the next millisecond.
INSTANTS = [
    datetime(2026, 1, 2, 3, 4, 5, 0, tzinfo=UTC),
    datetime(2026, 1, 2, 3, 4, 5, 500, tzinfo=UTC),
    datetime(2026, 1, 2, 3, 4, 5, 999, tzinfo=UTC),
    datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
]
SHOWN = [
    "2026-01-02T03:04:05.000Z",
    "2026-01-02T03:04:05.000Z",
    "2026-01-02T03:04:05.000Z",
    "1999-12-31T23:59:59.999Z",
]


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_listed_timestamps_are_shown_cut_and_paged_exactly(owner: Actor, order: str) -> None:
    ids = []
    for at, instant in enumerate(INSTANTS):
        file_id = start_upload(owner, b"x", filename=f"{at}.txt", content_type="text/plain")[
            "file"
        ]["id"]
        File.objects.filter(id=file_id).update(created_at=instant, updated_at=instant)
        ids.append(file_id)
    shown = dict(zip(ids, SHOWN, strict=True))

    listed: list[dict[str, Any]] = []
    cursor = None
    while True:  # one file a page: every cursor is one of the instants
        query = {"limit": 1, "sortBy": "createdAt", "order": order}
        body = owner.get("/v1/files", {**query, **({"cursor": cursor} if cursor else {})}).json()
        listed.extend(body["data"])
        cursor = body["pagination"]["nextCursor"]
        if not body["pagination"]["hasMore"]:
            break

    expected = sorted(ids, key=lambda file_id: INSTANTS[ids.index(file_id)])
    assert [item["id"] for item in listed] == (expected if order == "asc" else expected[::-1])
    for item in listed:
        assert item["createdAt"] == item["updatedAt"] == shown[item["id"]]
        got = owner.get(f"/v1/files/{item['id']}").json()["data"]
        assert got == item
