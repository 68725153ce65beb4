"""One JSON line per request, task logs with their task id, and no secret in any log."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import requests
from django.test import Client

from storage_service.celery import app
from storage_service.logs import JsonFormatter, TaskContextFilter
from tests.factories import Actor
from tests.helpers import start_upload

pytestmark = pytest.mark.django_db


def request_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "storage_service.requests"]


def test_each_request_logs_one_line_with_its_context(
    owner: Actor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="storage_service.requests")
    response = owner.client.get(
        "/v1/files/file_00000000000000000000000000", HTTP_X_REQUEST_ID="abc-1"
    )
    assert response.status_code == 404
    [record] = request_records(caplog)
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "INFO"
    assert line["requestId"] == "abc-1"
    assert line["method"] == "GET"
    assert line["route"] == "v1/files/<str:file_id>"  # the pattern: ids stay out of the log
    assert line["status"] == 404
    assert line["projectId"] == owner.project.id
    assert line["keyPrefix"] == owner.key.api_key.prefix
    assert line["durationMs"] >= 0
    assert line["time"].endswith("Z")


def test_unauthenticated_and_unknown_routes_are_logged_too(
    db: None, caplog: pytest.LogCaptureFixture
) -> None:
    from django.test import Client

    caplog.set_level(logging.INFO, logger="storage_service.requests")
    Client().get("/v1/me")
    Client().get("/no/such/route?token=secret")
    first, second = (json.loads(JsonFormatter().format(r)) for r in request_records(caplog))
    assert (first["status"], first["projectId"], first["keyPrefix"]) == (401, None, None)
    assert second["status"] == 404
    assert "secret" not in json.dumps(second)


def test_no_key_or_presigned_signature_reaches_any_log(
    owner: Actor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # everything, every logger
    started = start_upload(owner, b"hello")
    put = requests.put(
        started["upload"]["url"], data=b"hello", headers=started["upload"]["headers"], timeout=30
    )
    assert put.status_code == 200
    owner.post(f"/v1/files/{started['file']['id']}/complete")
    url = owner.post(f"/v1/files/{started['file']['id']}/download-url", {}).json()["url"]
    text = "\n".join(JsonFormatter().format(r) for r in caplog.records)
    assert owner.key.raw_key not in text
    assert "X-Amz-Signature" not in text
    assert url not in text
    assert "Bearer" not in text


@app.task(name="tests.ops.log_something")
def log_something(file_id: str) -> None:
    logging.getLogger("tests.ops").info("working", extra={"fileId": file_id})


def test_task_logs_carry_the_task_and_the_ids_it_works_on(caplog: Any) -> None:
    handler_filter = TaskContextFilter()
    caplog.set_level(logging.INFO, logger="tests.ops")
    caplog.handler.addFilter(handler_filter)
    try:
        result = log_something.apply(args=("file_x",), task_id="task-123")
    finally:
        caplog.handler.removeFilter(handler_filter)
    assert result.successful()
    [record] = [r for r in caplog.records if r.name == "tests.ops"]
    line = json.loads(JsonFormatter().format(record))
    assert line["taskId"] == "task-123"
    assert line["task"] == "tests.ops.log_something"
    assert line["fileId"] == "file_x"
    assert line["taskArgs"] == ["file_x"]


def test_the_single_file_read_logs_its_line(owner: Actor, caplog: pytest.LogCaptureFixture) -> None:
    """GET /v1/files/<id>'s line names the project and the key, for a found file and for a
    401."""
    caplog.set_level(logging.INFO, logger="storage_service.requests")
    file_id = start_upload(owner)["file"]["id"]
    caplog.clear()
    assert owner.client.get(f"/v1/files/{file_id}", HTTP_X_REQUEST_ID="one-2").status_code == 200
    [record] = request_records(caplog)
    line = json.loads(JsonFormatter().format(record))
    assert (line["requestId"], line["route"], line["status"]) == (
        "one-2",
        "v1/files/<str:file_id>",
        200,
    )
    assert line["projectId"] == owner.project.id
    assert line["keyPrefix"] == owner.key.api_key.prefix
    caplog.clear()
    anonymous = Client().get(
        f"/v1/files/{file_id}", HTTP_AUTHORIZATION="Bearer sk_test_" + "x" * 43
    )
    assert anonymous.status_code == 401
    [record] = request_records(caplog)
    assert (record.status, record.projectId) == (401, None)  # type: ignore[attr-defined]


def test_the_console_gets_one_json_line_per_request(owner: Actor) -> None:
    """With logging as the settings configure it (the root's JSON console handler), each
    request writes one line with the same keys, in the same order, whatever its answer."""
    import io

    stream = io.StringIO()
    console = logging.StreamHandler(stream)
    console.setFormatter(JsonFormatter())
    console.addFilter(TaskContextFilter())
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    root.handlers = [console]
    root.setLevel(logging.INFO)
    try:
        owner.client.get("/v1/files/file_00000000000000000000000000", HTTP_X_REQUEST_ID="r-1")
        owner.client.get("/v1/files?limit=2", HTTP_X_REQUEST_ID="r-2")
        Client().get("/v1/me", HTTP_X_REQUEST_ID="r-3")
    finally:
        root.handlers, root.level = saved[0], saved[1]
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    requests_ = [line for line in lines if line["logger"] == "storage_service.requests"]
    assert [line["status"] for line in requests_] == [404, 200, 401]
    assert [line["requestId"] for line in requests_] == ["r-1", "r-2", "r-3"]
    for line in requests_:
        assert list(line) == [
            "time",
            "level",
            "logger",
            "message",
            "requestId",
            "method",
            "route",
            "status",
            "durationMs",
            "projectId",
            "keyPrefix",
        ]
    assert requests_[1]["projectId"] == owner.project.id and requests_[2]["projectId"] is None
