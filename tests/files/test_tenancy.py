"""Another project's file behaves exactly like a missing one."""

from __future__ import annotations

from files.models import File
from tests.factories import Actor
from tests.helpers import uploaded_file

MISSING = "file_00000000000000000000000000"


def requests_for(file_id: str) -> list[tuple[str, str, dict | None]]:
    return [
        ("get", f"/v1/files/{file_id}", None),
        ("patch", f"/v1/files/{file_id}", {"filename": "stolen.png"}),
        ("delete", f"/v1/files/{file_id}", None),
        ("post", f"/v1/files/{file_id}/complete", None),
        ("post", f"/v1/files/{file_id}/copy", {}),
        ("post", f"/v1/files/{file_id}/download-url", {}),
        ("post", f"/v1/files/{file_id}/replace", {"contentType": "image/png", "size": 3}),
        ("post", f"/v1/files/{file_id}/replace/complete", None),
        ("post", f"/v1/files/{file_id}/restore", None),
    ]


def send(actor: Actor, method: str, url: str, body: dict | None) -> tuple[int, dict]:
    if method == "get":
        response = actor.get(url)
    elif method == "delete":
        response = actor.delete(url)
    elif method == "patch":
        response = actor.patch(url, body)
    else:
        response = actor.post(url, body)
    return response.status_code, response.json()


def test_a_sibling_project_sees_the_owners_file_as_missing(owner: Actor, sibling: Actor) -> None:
    file = uploaded_file(owner, path="private")
    for (method, url, body), (_, missing_url, _) in zip(
        requests_for(file["id"]), requests_for(MISSING), strict=True
    ):
        assert send(sibling, method, url, body) == send(sibling, method, missing_url, body), url
    assert File.objects.get(id=file["id"]).filename == file["filename"]
    assert owner.get(f"/v1/files/{file['id']}").json()["data"]["status"] == "uploaded"


def test_an_outsider_sees_nothing_in_lists_or_folders(owner: Actor, outsider: Actor) -> None:
    uploaded_file(owner, path="private/deep")

    assert outsider.get("/v1/files").json() == {
        "data": [],
        "pagination": {"hasMore": False, "nextCursor": None},
    }
    assert outsider.get("/v1/folders").json()["data"] == []
    assert outsider.get("/v1/files", {"status": "deleted"}).json()["data"] == []


def test_an_outsider_cannot_replay_the_owners_idempotency_key(
    owner: Actor, outsider: Actor
) -> None:
    body = {"filename": "a.png", "contentType": "image/png", "size": 3}
    mine = owner.post("/v1/files/upload", body, **{"Idempotency-Key": "k1"}).json()["file"]
    theirs = outsider.post("/v1/files/upload", body, **{"Idempotency-Key": "k1"}).json()["file"]
    assert mine["id"] != theirs["id"]
    assert File.objects.get(id=theirs["id"]).project_id == outsider.project.id
