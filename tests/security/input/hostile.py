"""What a hostile client sends, over plain HTTP (requests), and how a refusal reads."""

from __future__ import annotations

import json
from typing import Any

import requests

from tests.factories import Actor

MIB = 1024 * 1024
CRLF_TYPE = 'text/plain; a="x\r\nX-Injected: yes"'


def auth(actor: Actor, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {actor.key.raw_key}", **extra}


def send(
    method: str, api: str, actor: Actor, path: str, body: Any = None, **headers: str
) -> requests.Response:
    data = None if body is None else body if isinstance(body, bytes) else json.dumps(body)
    return requests.request(
        method,
        f"{api}{path}",
        data=data,
        headers=auth(actor, **{"Content-Type": "application/json", **headers}),
        timeout=60,
    )


def post(api: str, actor: Actor, path: str, body: Any, **headers: str) -> requests.Response:
    return send("POST", api, actor, path, body, **headers)


def upload_body(**extra: Any) -> dict[str, Any]:
    return {"filename": "a.txt", "contentType": "text/plain", "size": 3, **extra}


def refused(response: requests.Response, status: int = 400, code: str = "VALIDATION_ERROR") -> Any:
    """The one error body, with ``status`` and ``code``; returns its ``details``."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    error = response.json()["error"]
    assert error["code"] == code, error
    return error.get("details", {})


def uploaded_file(api: str, actor: Actor, data: bytes = b"abc", **extra: Any) -> dict[str, Any]:
    started = post(api, actor, "/v1/files/upload", upload_body(size=len(data), **extra))
    assert started.status_code == 201, started.text
    upload = started.json()["upload"]
    put = requests.put(upload["url"], data=data, headers=upload["headers"], timeout=30)
    assert put.status_code == 200, put.text
    done = post(api, actor, f"/v1/files/{started.json()['file']['id']}/complete", {})
    assert done.status_code == 200, done.text
    return dict(started.json()["file"])


def document(api: str) -> dict[str, Any]:
    return dict(requests.get(f"{api}/v1/openapi.json", timeout=30).json())


def request_schema(api: str, name: str) -> dict[str, Any]:
    return dict(document(api)["components"]["schemas"][name])
