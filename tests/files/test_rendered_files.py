"""A file in the list is the file object the contract defines, key for key, for files in
every state and with the worst names and metadata a client could store."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.renderers import JSONRenderer

from files.models import File
from files.serializers import file_json
from tests.factories import Actor, make_actor
from tests.helpers import start_upload

pytestmark = pytest.mark.django_db

HOSTILE = "quote \" backslash \\ line\u2028para\u2029 tab\t nl\n ctl\x01 del\x7f é 😀 'sq'"

# Each: the changes that put a started upload in one state, with values at the edges.
STATES: list[dict[str, Any]] = [
    {},  # pending: no uploadedAt, no checksum, no path
    {
        "status": "uploaded",
        "uploaded_at": datetime(2026, 1, 2, 3, 4, 5, 999999, tzinfo=UTC),
        "checksum": "sha256:" + "ab" * 32,
        "path": "a/b/c",
        "size": 2**62,
        "version": 7,
    },
    {"status": "failed", "checksum": "", "metadata": None},
    {
        "status": "deleted",
        "status_before_delete": "uploaded",
        "deleted_at": datetime(1999, 12, 31, 23, 59, 59, 1000, tzinfo=UTC),
        "uploaded_at": datetime(1999, 1, 1, tzinfo=UTC),
        "checksum": "sha256:" + "cd" * 32,
    },
    {"status": "deleted", "status_before_delete": "pending", "deleted_at": None},
    {
        "filename": HOSTILE,
        "path": HOSTILE,
        "content_type": 'text/plain; charset="utf-8"',
        "created_at": datetime(1, 1, 1, tzinfo=UTC),
        "updated_at": datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        "metadata": {
            HOSTILE: HOSTILE,
            "numbers": [0, -1, 1.0, 1.5, 1e-07, 1e100, 10**30, -0.0, 123456789.123456789],
            "nested": {"a": [None, True, False, {"b": []}], "": {}},
        },
    },
    {"metadata": {}},
    {"metadata": {"z": 1, "a": 2, "long key first": 3, "b": None}},
]


@pytest.fixture
def actor(db: None) -> Actor:
    return make_actor("rendered")


def _stored(actor: Actor) -> list[str]:
    ids = []
    for changes in STATES:
        file_id = start_upload(actor, metadata={"k": "v"})["file"]["id"]
        File.objects.filter(id=file_id).update(**changes)
        ids.append(file_id)
    return ids


@pytest.mark.parametrize("status", [None, "deleted"])
def test_the_list_shows_each_file_as_its_own_answer_does(actor: Actor, status: str | None) -> None:
    """Each listed file, key for key and in the same order, is the file as GET shows it (or,
    in the trash, as the file object renders it)."""
    _stored(actor)
    query = {"limit": 100, **({"status": status} if status else {})}
    response = actor.get("/v1/files", query)
    assert response.status_code == 200
    listed = response.json()["data"]
    assert len(listed) >= 2
    for item in listed:
        expected = file_json(File.objects.get(id=item["id"]))
        assert json.loads(JSONRenderer().render(expected)) == item
        assert list(item) == list(expected)
        if item["status"] != "deleted":
            one = actor.get(f"/v1/files/{item['id']}").json()["data"]
            assert list(one.items()) == list(item.items())
