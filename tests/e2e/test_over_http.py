"""The README's walkthrough over real HTTP: a live server, presigned URLs, real bytes."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.factories import make_actor

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_client_over_http_goes_through_the_whole_lifecycle(live_server: Any) -> None:
    owner = make_actor("http-client")
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {owner.key.raw_key}"
    base = f"{live_server.url}/v1"
    data = b"hello, storage\n"

    me = api.get(f"{base}/me")
    assert me.status_code == 200 and me.headers["X-Request-Id"]

    started = api.post(
        f"{base}/files/upload",
        json={
            "filename": "hello.txt",
            "contentType": "text/plain",
            "size": len(data),
            "path": "docs",
        },
    ).json()
    upload = started["upload"]
    file_id = started["file"]["id"]
    put = requests.put(upload["url"], data=data, headers=upload["headers"], timeout=30)
    assert put.status_code == 200
    assert api.post(f"{base}/files/{file_id}/complete").json()["data"]["status"] == "uploaded"

    listed = api.get(f"{base}/files", params={"path": "docs"}).json()["data"]
    assert [f["id"] for f in listed] == [file_id]
    assert (
        api.patch(f"{base}/files/{file_id}", json={"filename": "hi.txt"}).json()["filename"]
        == "hi.txt"
    )
    copy = api.post(f"{base}/files/{file_id}/copy", json={"path": "archive"})
    assert copy.status_code == 201

    url = api.post(f"{base}/files/{file_id}/download-url", json={}).json()["url"]
    assert requests.get(url, timeout=30).content == data

    v2 = b"hello again, storage\n"
    replace = api.post(
        f"{base}/files/{file_id}/replace", json={"contentType": "text/plain", "size": len(v2)}
    ).json()
    requests.put(
        replace["upload"]["url"], data=v2, headers=replace["upload"]["headers"], timeout=30
    )
    assert api.post(f"{base}/files/{file_id}/replace/complete").json()["version"] == 2

    assert api.delete(f"{base}/files/{file_id}").json() == {
        "data": {"id": file_id, "deleted": True}
    }
    assert api.get(f"{base}/files/{file_id}").status_code == 404
    assert api.post(f"{base}/files/{file_id}/restore").json()["status"] == "uploaded"
    url = api.post(f"{base}/files/{file_id}/download-url", json={}).json()["url"]
    assert requests.get(url, timeout=30).content == v2

    folders = api.get(f"{base}/folders").json()["data"]
    assert [f["path"] for f in folders] == ["archive", "docs"]

    unauthenticated = requests.get(f"{base}/files", timeout=30)
    assert unauthenticated.status_code == 401
    assert unauthenticated.json()["error"]["code"] == "UNAUTHENTICATED"
