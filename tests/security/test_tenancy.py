"""Tenancy as a hostile client meets it, over real HTTP (the API server, the real store).

A tenant is a project *and* a mode: a key of another project and a key of the same project in
the other mode (test vs live) are both strangers. For every route that takes an id, a
stranger's id answers exactly like an id that does not exist (same status, code and body);
lists never show a stranger's rows; a test key cannot delete a live file; an endpoint gets
only the events of its own mode; usage is counted per mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from accounts.models import ApiKey, Project
from accounts.services import api_key_issue, project_create
from accounts.tenancy import Tenant
from accounts.usage import project_usage
from storage_service.celery import app
from storage_service.ids import new_id
from tests.factories import png_bytes, upload_body
from tests.servers import serve_api
from tests.storage import put_to

MIB = 1024 * 1024
# Registration of a local receiver URL is allowed (nothing is ever sent: no worker reads the
# queues below).
# Queues no worker reads: the session's Celery worker (started by earlier tests) consumes the
# suite's own queues, and would make this module's thumbnails and send its deliveries while a
# test's tables are being truncated (a deadlock at teardown). The messages are dropped at the
# end; these tests read what the API answers and records, not what workers do.
TENANCY_QUEUES = ("storage-tenancy", "storage-tenancy-webhooks", "storage-tenancy-transforms")
SERVER_ENV = {
    "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
    "CELERY_TASK_DEFAULT_QUEUE": TENANCY_QUEUES[0],
    "SERVICE_WEBHOOK_QUEUE": TENANCY_QUEUES[1],
    "SERVICE_TRANSFORM_QUEUE": TENANCY_QUEUES[2],
}
HOOK_URL = "http://127.0.0.1:9/hook"


@dataclass
class Key:
    base: str
    raw: str

    def call(self, method: str, path: str, body: Any = None) -> requests.Response:
        return requests.request(
            method,
            self.base + path,
            json=body,
            headers={"Authorization": f"Bearer {self.raw}"},
            timeout=30,
        )

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        response = self.call(method, path, body)
        assert response.status_code in (200, 201, 202), (path, response.status_code, response.text)
        return response.json()


@pytest.fixture(scope="module")
def api_base(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with serve_api(workers=1, **SERVER_ENV) as base:
        yield base
    with app.connection_for_write() as connection:
        channel: Any = connection.default_channel
        for queue in TENANCY_QUEUES:
            channel.queue_purge(queue)


@dataclass
class World:
    live: Key  # project A, live: owns every resource below
    test: Key  # project A, test: the other mode
    other: Key  # project B, live: another project
    ids: dict[str, str]


def _uploaded(key: Key, data: bytes, **body: Any) -> str:
    started = key.ok("POST", "/v1/files/upload", upload_body(data, **body))
    assert put_to(started["upload"], data).status_code == 200
    file_id = started["file"]["id"]
    key.ok("POST", f"/v1/files/{file_id}/complete")
    return str(file_id)


@pytest.fixture
def world(transactional_db: None, api_base: str) -> World:
    project = project_create(name="tenancy-a", organization_name="tenancy")
    stranger = project_create(name="tenancy-b", organization_name="tenancy")

    def key(on: Any, environment: str) -> Key:
        return Key(api_base, api_key_issue(project=on, environment=environment).raw_key)

    live, test, other = key(project, "live"), key(project, "test"), key(stranger, "live")
    webhook = live.ok("POST", "/v1/webhooks", {"url": HOOK_URL})["data"]["webhook"]["id"]
    # After the endpoint: this upload's events give it deliveries.
    image = _uploaded(live, png_bytes(), filename="a.png", path="live-only/deep")
    pending = live.ok("POST", "/v1/files/upload", upload_body(b"abc", filename="p.txt"))
    variant = live.ok("POST", f"/v1/files/{image}/transform", {"width": 4})["data"]["id"]
    multipart = live.ok(
        "POST",
        "/v1/uploads/multipart",
        {"filename": "big.bin", "contentType": "application/octet-stream", "size": 9 * MIB},
    )["data"]
    deliveries = live.ok("GET", f"/v1/webhooks/{webhook}/deliveries")["data"]
    assert deliveries, "the live endpoint got the live events"
    return World(
        live=live,
        test=test,
        other=other,
        ids={
            "file": image,
            "pending": pending["file"]["id"],
            "upload": multipart["upload"]["id"],
            "var": variant,
            "wh": webhook,
            "dl": deliveries[0]["id"],
        },
    )


def _error(response: requests.Response) -> tuple[int, Any]:
    return response.status_code, response.json()


def _routes(ids: dict[str, str], own_file: str, own_webhook: str) -> list[tuple[str, str, Any]]:
    """Every route that takes an id, with a valid body. ``ids`` are the ids to try; a variant
    or delivery is tried on the caller's own file or endpoint as well as through the owner's."""
    f, p, u, v, w, d = ids["file"], ids["pending"], ids["upload"], ids["var"], ids["wh"], ids["dl"]
    return [
        ("GET", f"/v1/files/{f}", None),
        ("PATCH", f"/v1/files/{f}", {"filename": "stolen.png"}),
        ("POST", f"/v1/files/{p}/complete", None),
        ("POST", f"/v1/files/{f}/copy", {"filename": "stolen.png"}),
        ("POST", f"/v1/files/{f}/download-url", {}),
        ("POST", f"/v1/files/{f}/replace", {"contentType": "image/png", "size": 3}),
        ("POST", f"/v1/files/{f}/replace/complete", None),
        ("POST", f"/v1/files/{f}/restore", None),
        ("POST", f"/v1/files/{f}/transform", {"width": 5}),
        ("GET", f"/v1/files/{f}/variants", None),
        ("POST", f"/v1/files/{f}/variants/{v}/download-url", {}),
        ("POST", f"/v1/files/{own_file}/variants/{v}/download-url", {}),
        ("GET", f"/v1/uploads/multipart/{u}/parts", None),
        ("POST", f"/v1/uploads/multipart/{u}/parts", {"partNumbers": [1]}),
        (
            "POST",
            f"/v1/uploads/multipart/{u}/complete",
            {"parts": [{"partNumber": 1, "etag": "x"}]},
        ),
        ("GET", f"/v1/webhooks/{w}", None),
        ("GET", f"/v1/webhooks/{w}/deliveries", None),
        ("POST", f"/v1/webhooks/{w}/deliveries/{d}/redeliver", None),
        ("POST", f"/v1/webhooks/{own_webhook}/deliveries/{d}/redeliver", None),
        # The destructive ones last, so a leak shows as a wrong answer, not a missing row.
        ("DELETE", f"/v1/uploads/multipart/{u}", None),
        ("DELETE", f"/v1/webhooks/{w}", None),
        ("DELETE", f"/v1/files/{f}", None),
        ("DELETE", f"/v1/files/{p}", None),
    ]


@pytest.mark.parametrize("stranger", ["test", "other"])
def test_a_strangers_id_answers_exactly_like_a_missing_one(world: World, stranger: str) -> None:
    """The other mode of the same project, and another project, on every id route."""
    key: Key = getattr(world, stranger)
    own_file = _uploaded(key, png_bytes(), filename="mine.png")
    own_webhook = key.ok("POST", "/v1/webhooks", {"url": HOOK_URL})["data"]["webhook"]["id"]
    missing = {prefix: new_id(prefix) for prefix in ("file", "upload", "var", "wh", "dl")}
    missing["pending"] = new_id("file")
    foreign = _routes(world.ids, own_file, own_webhook)
    absent = _routes(missing, own_file, own_webhook)
    for (method, path, body), (_, missing_path, _) in zip(foreign, absent, strict=True):
        answer = _error(key.call(method, path, body))
        expected = _error(key.call(method, missing_path, body))
        assert expected[0] == 404, (missing_path, expected)
        assert answer == expected, (method, path)

    # Nothing of the owner's changed: the file is still there, named as it was, not deleted.
    file = world.live.ok("GET", f"/v1/files/{world.ids['file']}")["data"]
    assert (file["filename"], file["status"]) == ("a.png", "uploaded")
    hook = world.live.ok("GET", f"/v1/webhooks/{world.ids['wh']}")["data"]
    assert hook["id"] == world.ids["wh"]
    assert world.live.ok("GET", f"/v1/files/{world.ids['pending']}")["data"]["status"] == "pending"


def test_a_test_key_cannot_delete_a_live_file(world: World) -> None:
    file_id = world.ids["file"]
    refused = world.test.call("DELETE", f"/v1/files/{file_id}")
    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "FILE_NOT_FOUND"
    assert world.live.ok("GET", f"/v1/files/{file_id}")["data"]["status"] == "uploaded"
    assert world.test.call("POST", f"/v1/files/{file_id}/restore").status_code == 404


@pytest.mark.parametrize("stranger", ["test", "other"])
def test_lists_never_show_a_strangers_rows(world: World, stranger: str) -> None:
    key: Key = getattr(world, stranger)
    mine = _uploaded(key, b"mine", filename="mine.txt", content_type="text/plain", path="mine")
    webhook = key.ok("POST", "/v1/webhooks", {"url": HOOK_URL})["data"]["webhook"]["id"]
    _uploaded(world.live, b"owner's", filename="o.txt", content_type="text/plain")
    key.ok("DELETE", f"/v1/files/{mine}")  # in the trash

    for status in ("", "?status=deleted", "?status=pending", "?status=uploaded"):
        listed = [f["id"] for f in key.ok("GET", f"/v1/files{status}")["data"]]
        assert not set(listed) & {world.ids["file"], world.ids["pending"]}, status
    assert [f["id"] for f in key.ok("GET", "/v1/files?status=deleted")["data"]] == [mine]
    assert key.ok("GET", "/v1/files?search=a.png")["data"] == []
    assert key.ok("GET", "/v1/files?path=live-only/deep")["data"] == []
    folders = [f["name"] for f in key.ok("GET", "/v1/folders")["data"]]
    assert "live-only" not in folders
    assert key.ok("GET", "/v1/folders?parent=live-only")["data"] == []
    assert [w["id"] for w in key.ok("GET", "/v1/webhooks")["data"]] == [webhook]
    # The stranger's endpoint got its own event, none of the owner's.
    deliveries = key.ok("GET", f"/v1/webhooks/{webhook}/deliveries")["data"]
    assert [d["event"]["type"] for d in deliveries] == ["file.deleted"]


def test_an_endpoint_gets_only_events_of_its_own_mode(world: World) -> None:
    test_hook = world.test.ok("POST", "/v1/webhooks", {"url": HOOK_URL})["data"]["webhook"]["id"]
    live_hook = world.ids["wh"]
    before = {d["id"] for d in world.live.ok("GET", f"/v1/webhooks/{live_hook}/deliveries")["data"]}

    test_file = _uploaded(world.test, b"test data", filename="t.txt", content_type="text/plain")
    live_file = _uploaded(world.live, b"live data", filename="l.txt", content_type="text/plain")

    def events(key: Key, hook: str, exclude: set[str]) -> list[str]:
        rows = key.ok("GET", f"/v1/webhooks/{hook}/deliveries")["data"]
        # A worker left running by other tests may finish the live image's thumbnail
        # meanwhile: that live event is the live endpoint's, and is not counted here.
        processing = {"file.processed", "file.processing_failed"}
        return sorted(
            d["event"]["type"]
            for d in rows
            if d["id"] not in exclude and d["event"]["type"] not in processing
        )

    assert events(world.test, test_hook, set()) == ["file.created", "file.uploaded"]
    assert events(world.live, live_hook, before) == ["file.created", "file.uploaded"]
    assert test_file != live_file


def test_usage_is_counted_per_mode(world: World) -> None:
    project = Project.objects.get(name="tenancy-a")
    world.test.ok(
        "POST", f"/v1/files/{_uploaded(world.test, b'12345', filename='t.txt')}/download-url", {}
    )
    world.live.ok("POST", f"/v1/files/{world.ids['file']}/download-url", {})
    live = project_usage(Tenant(project=project, mode=ApiKey.Environment.LIVE))
    test = project_usage(Tenant(project=project, mode=ApiKey.Environment.TEST))
    assert (test.storage_bytes, test.stored_objects, test.bandwidth_bytes, test.downloads) == (
        5,
        1,
        5,
        1,
    )
    # Live also stores the image's variants if a worker has made them meanwhile.
    assert live.storage_bytes >= len(png_bytes()) and live.stored_objects >= 1
    assert (live.bandwidth_bytes, live.downloads) == (len(png_bytes()), 1)
