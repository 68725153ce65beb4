"""Every field of every endpoint, given every JSON type, answers a 4xx or a 2xx: never a 500."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import Actor
from tests.helpers import start_upload, uploaded_file

ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    10**40,
    1.5,
    "",
    " ",
    "x" * 5000,
    "ü/../é",
    [],
    [1, "a"],
    {},
    {"nested": {"deep": [None]}},
]

BODIES = {
    "upload": ["filename", "contentType", "size", "path", "metadata"],
    "patch": ["filename", "path", "metadata"],
    "copy": ["filename", "path"],
    "download-url": ["expiresInSeconds"],
    "replace": ["contentType", "size"],
}
VALID: dict[str, dict[str, Any]] = {
    "upload": {"filename": "a.png", "contentType": "image/png", "size": 3},
    "patch": {"filename": "b.png"},
    "copy": {"filename": "c.png"},
    "download-url": {},
    "replace": {"contentType": "image/png", "size": 3},
}


def send(actor: Actor, action: str, file_id: str, body: Any) -> Any:
    if action == "upload":
        return actor.post("/v1/files/upload", body)
    if action == "patch":
        return actor.patch(f"/v1/files/{file_id}", body)
    return actor.post(f"/v1/files/{file_id}/{action}", body)


@pytest.mark.parametrize("action", list(BODIES))
def test_odd_values_in_every_body_field(owner: Actor, action: str) -> None:
    file = uploaded_file(owner)
    for field in BODIES[action]:
        for value in ODD_VALUES:
            response = send(owner, action, file["id"], {**VALID[action], field: value})
            assert response.status_code < 500, (action, field, value, response.content)
            if action == "replace" and response.status_code == 200:
                # Let the next value be judged too, not answered REPLACE_IN_PROGRESS.
                owner.delete(f"/v1/files/{file['id']}")
                owner.post(f"/v1/files/{file['id']}/restore")


@pytest.mark.parametrize("body", ODD_VALUES)
def test_odd_whole_bodies(owner: Actor, body: Any) -> None:
    file = start_upload(owner)["file"]
    for url in [
        "/v1/files/upload",
        f"/v1/files/{file['id']}/complete",
        f"/v1/files/{file['id']}/restore",
        f"/v1/files/{file['id']}/replace/complete",
    ]:
        assert owner.post(url, body).status_code < 500, (url, body)


@pytest.mark.parametrize(
    "param", ["limit", "cursor", "search", "path", "status", "contentType", "sortBy", "order"]
)
def test_odd_list_parameters(owner: Actor, param: str) -> None:
    for value in ["", " ", "-1", "1e2", "x" * 5000, "ü", "%", "\\", "null", "[]", "a/b/../c"]:
        response = owner.get("/v1/files", {param: value})
        assert response.status_code in {200, 400}, (param, value, response.content)
    for value in ["", "/", "x" * 5000, "a//b", "%", "ü"]:
        assert owner.get("/v1/folders", {"parent": value}).status_code in {200, 400}
