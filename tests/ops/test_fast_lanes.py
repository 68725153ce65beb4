"""The fast lanes (storage_service/fastlane.py, files/fastviews.py) answer exactly
what the DRF views behind them answer: for every kind of request, the same request is sent to
the lane's view and to the DRF view alone, and status, headers and body bytes are compared.
Success cases must also really be served by the lane (one SQL statement for a read, where the
DRF view makes two), and every request is counted once by the rate limiter, whichever view
answered it."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import pytest
from django.core import signing
from django.db import connection
from django.http import HttpResponse
from django.test import RequestFactory, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import resolve

from accounts import throttling
from files.models import File
from tests.factories import Actor, upload_body
from tests.helpers import png_bytes, start_upload, uploaded_file

pytestmark = pytest.mark.django_db

FACTORY = RequestFactory()


def both(
    method: str, path: str, key: str | None, body: bytes | None = None, **meta: Any
) -> tuple[HttpResponse, HttpResponse, int]:
    """The lane's answer, the DRF view's answer to the same request, and how many SQL
    statements the lane's view ran."""
    lane = resolve(path.partition("?")[0])
    headers = dict(meta)
    if key is not None:
        headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {key}")
    content_type = headers.pop("CONTENT_TYPE", "application/json")

    def request() -> Any:
        if method == "GET":
            return FACTORY.get(path, **headers)
        return FACTORY.generic(method, path, body or b"", content_type=content_type, **headers)

    # A page's cursor is signed with the time in seconds: both answers sign at the same one,
    # or a second boundary between them would differ them.
    stamp = signing.TimestampSigner().timestamp()
    with mock.patch.object(signing.TimestampSigner, "timestamp", return_value=stamp):
        with CaptureQueriesContext(connection) as queries:
            fast = lane.func(request(), **lane.kwargs)
        slow = lane.func.fallback(request(), **lane.kwargs)  # type: ignore[attr-defined]
    for response in (fast, slow):
        if hasattr(response, "render"):  # Django's handler renders a DRF Response later
            response.render()
    return fast, slow, len(queries.captured_queries)


def assert_same(fast: HttpResponse, slow: HttpResponse) -> None:
    assert fast.status_code == slow.status_code, (fast.content, slow.content)
    assert dict(fast.items()) == dict(slow.items())
    assert fast.content == slow.content


@pytest.fixture
def files(owner: Actor) -> dict[str, str]:
    """Files of the owner in several states, with metadata and paths."""
    made = {
        "uploaded": uploaded_file(owner, path="docs/a", metadata={"k": "v", "n": [1, 2.5, None]})[
            "id"
        ],
        "pending": start_upload(owner, path="docs/a", metadata={"é": "ü"})["file"]["id"],
        "root": uploaded_file(owner, filename="root.png")["id"],
        "deleted": uploaded_file(owner, path="docs/b")["id"],
    }
    assert owner.delete(f"/v1/files/{made['deleted']}").status_code == 200
    return made


def test_get_one_file_is_served_by_the_lane_and_equal_to_drf(
    owner: Actor, files: dict[str, str]
) -> None:
    for name in ("uploaded", "pending", "root"):
        fast, slow, statements = both("GET", f"/v1/files/{files[name]}", owner.key.raw_key)
        assert fast.status_code == 200, name
        assert statements == 1, name  # the key and the file in one statement
        assert_same(fast, slow)
    body = json.loads(fast.content)["data"]
    assert body["id"] == files["root"] and body["metadata"] is None


@pytest.mark.parametrize(
    ("case", "headers"),
    [
        ("no key", {"HTTP_AUTHORIZATION": ""}),
        ("not bearer", {"HTTP_AUTHORIZATION": "Basic abc"}),
        ("unknown key", {"HTTP_AUTHORIZATION": "Bearer sk_test_" + "A" * 43}),
        ("html", {"HTTP_ACCEPT": "text/html"}),
        ("json with quality", {"HTTP_ACCEPT": "application/json; q=0.5, text/html"}),
    ],
)
def test_get_refusals_are_drfs(
    owner: Actor, files: dict[str, str], case: str, headers: dict[str, str]
) -> None:
    fast, slow, _ = both(
        "GET", f"/v1/files/{files['uploaded']}", owner.key.raw_key, None, **headers
    )
    assert_same(fast, slow)
    assert fast.status_code != 200 or case == "json with quality"


def test_get_missing_deleted_foreign_and_malformed_ids_are_404_as_drf(
    owner: Actor, sibling: Actor, files: dict[str, str]
) -> None:
    for file_id, key in [
        (files["deleted"], owner.key.raw_key),
        ("file_00000000000000000000000000", owner.key.raw_key),
        ("not-an-id", owner.key.raw_key),
        (files["uploaded"], sibling.key.raw_key),
    ]:
        fast, slow, _ = both("GET", f"/v1/files/{file_id}", key)
        assert fast.status_code == 404
        assert_same(fast, slow)


def _upload_view(body: dict[str, Any] | bytes) -> bytes:
    return body if isinstance(body, bytes) else json.dumps(body).encode()


def test_upload_is_served_by_the_lane_and_shaped_as_drfs(owner: Actor) -> None:
    body = _upload_view(upload_body(png_bytes(), path="in/here", metadata={"a": 1}))
    fast, slow, statements = both("POST", "/v1/files/upload", owner.key.raw_key, body)
    assert fast.status_code == slow.status_code == 201
    assert statements == 2  # the key, then the file, its stored object and its event
    assert dict(fast.items()) == dict(slow.items())
    one, other = json.loads(fast.content), json.loads(slow.content)
    different = {"id", "createdAt", "updatedAt"}
    assert {k: v for k, v in one["file"].items() if k not in different} == {
        k: v for k, v in other["file"].items() if k not in different
    }
    assert one["upload"].keys() == other["upload"].keys()
    assert one["upload"]["headers"] == other["upload"]["headers"]
    made = File.objects.get(id=one["file"]["id"])
    assert (made.filename, made.path, made.metadata, made.status) == (
        "photo.png",
        "in/here",
        {"a": 1},
        "pending",
    )


@pytest.mark.parametrize(
    ("case", "body", "meta"),
    [
        ("not json", b"{", {}),
        ("not an object", b"[]", {}),
        ("null", b"null", {}),
        ("too deep", b"[" * 100 + b"]" * 100, {}),
        ("missing fields", b"{}", {}),
        ("unknown field", b'{"filename":"a","contentType":"image/png","size":1,"x":1}', {}),
        ("too large", b'{"filename":"a","contentType":"image/png","size":99999999999999}', {}),
        ("empty body", b"", {}),
        ("form", b"filename=a", {"CONTENT_TYPE": "application/x-www-form-urlencoded"}),
        ("text", b"{}", {"CONTENT_TYPE": "text/plain"}),
        (
            "idempotency key",
            b'{"filename":"a","contentType":"image/png","size":1}',
            {"HTTP_IDEMPOTENCY_KEY": "k1"},
        ),
        ("bad idempotency key", b"{}", {"HTTP_IDEMPOTENCY_KEY": "\x01"}),
        ("no key", b"{}", {"HTTP_AUTHORIZATION": ""}),
        ("html", b"{}", {"HTTP_ACCEPT": "text/html"}),
    ],
)
def test_upload_refusals_are_drfs(
    owner: Actor, case: str, body: bytes, meta: dict[str, str]
) -> None:
    before = File.objects.count()
    fast, slow, _ = both("POST", "/v1/files/upload", owner.key.raw_key, body, **meta)
    if case == "idempotency key":  # the second request replays the first one's answer
        assert fast.status_code == 201 and slow["Idempotent-Replayed"] == "true"
        assert json.loads(fast.content) == json.loads(slow.content)
        return
    assert fast.status_code >= 400, case
    assert_same(fast, slow)
    assert File.objects.count() == before


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=4, SERVICE_RATE_LIMIT_WRITES_PER_MINUTE=2)
def test_every_request_is_counted_once_and_the_429_is_drfs(
    owner: Actor, files: dict[str, str]
) -> None:
    throttling.reset_client()
    counters = throttling._redis()
    for counter in counters.scan_iter(f"*:rl:{owner.key.api_key.pk}:*"):
        counters.delete(counter)  # the fixture's own requests counted too
    path = f"/v1/files/{files['uploaded']}"
    # Two served by the lane, two by the DRF view (a 404 falls back after the lane's read):
    # four reads, the whole budget.
    answers = []
    for p in (path, "/v1/files/file_00000000000000000000000000", path, "/v1/files?limit=1"):
        match = resolve(p.partition("?")[0])
        request = FACTORY.get(p, HTTP_AUTHORIZATION=f"Bearer {owner.key.raw_key}")
        answers.append(match.func(request, **match.kwargs))
    assert [a.status_code for a in answers] == [200, 404, 200, 200]
    fast, slow, _ = both("GET", path, owner.key.raw_key)
    assert fast.status_code == 429
    assert fast.content == slow.content
    assert {k: v for k, v in fast.items() if k != "Retry-After"} == {
        k: v for k, v in slow.items() if k != "Retry-After"
    }
    assert 1 <= int(fast["Retry-After"]) <= 60
    body = json.dumps(upload_body(png_bytes())).encode()
    writes = [both("POST", "/v1/files/upload", owner.key.raw_key, body)[0].status_code]
    assert writes == [201]  # the lane's one, then the DRF view's: the budget of two is spent
    fast, slow, _ = both("POST", "/v1/files/upload", owner.key.raw_key, body)
    assert fast.status_code == slow.status_code == 429
