"""The list's fast lane has PostgreSQL write each file's JSON (files/rendering.py): it must be
the text file_json renders to, key for key and byte for byte, for files in every state and
with the worst names and metadata a client could store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import pytest
from django.core import signing
from rest_framework.renderers import JSONRenderer

from files import rendering, selectors
from files.models import File
from files.serializers import file_json
from files.shapes import FileJson
from storage_service.fastlane import spliced
from storage_service.shapes import paged
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


def _keys(keys: tuple[rendering._Key, ...]) -> list[str]:
    return [key.name for key in keys]


def test_the_sql_writes_every_key_of_the_shape_in_its_order() -> None:
    assert [*_keys(rendering.HEAD), rendering.METADATA, *_keys(rendering.TAIL)] == list(
        FileJson.__annotations__
    )
    optional = {key.name for key in rendering.TAIL + rendering.HEAD if key.when is not None}
    # (The shapes' annotations are strings, so __optional_keys__ does not know NotRequired.)
    declared = {
        key for key, kind in FileJson.__annotations__.items() if "NotRequired[" in str(kind)
    }
    assert optional == declared == {"uploadedAt", "checksum", "deletedAt"}


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


@pytest.fixture(autouse=True)
def one_second() -> Iterator[None]:
    """Cursors are signed with the time in seconds: both reads sign at the same one."""
    stamp = signing.TimestampSigner().timestamp()
    with mock.patch.object(signing.TimestampSigner, "timestamp", return_value=stamp):
        yield


@pytest.mark.parametrize("status", [None, "deleted"])
def test_each_file_renders_as_file_json_renders(actor: Actor, status: str | None) -> None:
    _stored(actor)
    filters = {"status": status} if status else {}
    options = selectors.FileListOptions(limit=100)
    rendered = selectors.file_list_rendered_with_key(
        raw_key=actor.key.raw_key, filters=filters, options=options
    )
    built = selectors.file_list(tenant=actor.tenant, filters=filters, options=options)
    assert rendered is not None and rendered.page is not None
    assert len(rendered.page.items) == len(built.items) >= 2

    for text, file in zip(rendered.page.items, built.items, strict=True):
        expected = file_json(file)
        got = json.loads(text.json)
        for key in FileJson.__annotations__:  # key by key, for a clear failure
            assert (key in got, got.get(key)) == (key in expected, expected.get(key)), key
        assert list(got) == list(expected)
    # And the answers, byte for byte, as the DRF view renders the page.
    body = spliced(
        paged(rendered.page, lambda item: None), [item.json for item in rendered.page.items]
    )
    assert body == JSONRenderer().render(paged(built, file_json))


def test_a_page_cursor_is_the_same_either_way(actor: Actor) -> None:
    _stored(actor)
    for sort_by in selectors.SORT_FIELDS:
        options = selectors.FileListOptions(limit=2, sort_by=sort_by, order="asc")
        rendered = selectors.file_list_rendered_with_key(
            raw_key=actor.key.raw_key, filters={}, options=options
        )
        built = selectors.file_list(tenant=actor.tenant, filters={}, options=options)
        assert rendered is not None and rendered.page is not None
        assert rendered.page.pagination_json() == built.pagination_json()
        assert rendered.page.next_cursor is not None
