"""POST, GET and DELETE /v1/upload-tokens: the token object, its validation, tenancy."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.keys import hash_key
from tests.factories import Actor
from tests.helpers import error_code
from tests.uploads.tokens import mint
from uploads.models import UploadToken

pytestmark = pytest.mark.django_db

BASE = "/v1/upload-tokens"


def test_an_empty_body_mints_a_token_for_one_file_for_fifteen_minutes(owner: Actor) -> None:
    response = owner.post(BASE, {})

    assert response.status_code == 201
    data = response.json()["data"]
    token, minted = data["token"], data["uploadToken"]
    assert token.startswith("ut_") and len(token) == 46
    assert minted["id"].startswith("utk_")
    assert (minted["maxFiles"], minted["filesStarted"]) == (1, 0)
    assert minted["path"] is None and minted["allowedContentTypes"] is None
    assert minted["maxFileSizeBytes"] is None and minted["allowedOrigins"] is None
    assert minted["metadata"] is None and minted["revokedAt"] is None
    row = UploadToken.objects.get(id=minted["id"])
    assert round((row.expires_at - row.created_at).total_seconds()) == 900


def test_every_bound_is_kept_and_shown(owner: Actor) -> None:
    minted = mint(
        owner,
        path="avatars/user-1",
        maxFileSizeBytes=1000,
        allowedContentTypes=["image/*", "Application/PDF"],
        maxFiles=10000,
        expiresInSeconds=86400,
        metadata={"userId": 1},
        allowedOrigins=["https://App.Example:443", "http://localhost:3000"],
    )["uploadToken"]

    assert minted["path"] == "avatars/user-1"
    assert minted["maxFileSizeBytes"] == 1000
    assert minted["allowedContentTypes"] == ["image/*", "application/pdf"]
    assert minted["maxFiles"] == 10000
    assert minted["metadata"] == {"userId": 1}
    assert minted["allowedOrigins"] == ["https://app.example", "http://localhost:3000"]
    assert owner.get(f"{BASE}/{minted['id']}").json()["data"] == minted


def test_only_a_keyed_hash_of_the_token_is_stored(owner: Actor) -> None:
    data = mint(owner)
    row = UploadToken.objects.get(id=data["uploadToken"]["id"])
    assert row.token_hash == hash_key(data["token"])
    assert data["token"] not in str(UploadToken.objects.filter(id=row.id).values().get())
    listed = owner.get(BASE).json()
    assert data["token"] not in str(listed)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("maxFiles", 10001),
        ("maxFiles", 0),
        ("maxFiles", "5"),
        ("expiresInSeconds", 59),
        ("expiresInSeconds", 86401),
        ("maxFileSizeBytes", 0),
        ("maxFileSizeBytes", 6 * 1024**4),
        ("path", ".."),
        ("path", "a/../b"),
        ("path", "/abs"),
        ("allowedContentTypes", ["image"]),
        ("allowedContentTypes", []),
        ("allowedContentTypes", "image/*"),
        ("allowedOrigins", ["app.example"]),
        ("allowedOrigins", ["https://app.example/page"]),
        ("allowedOrigins", ["ftp://app.example"]),
        ("allowedOrigins", ["https://user@app.example"]),
        ("allowedOrigins", []),
        ("metadata", {str(n): n for n in range(65)}),
        ("metadata", "x"),
        ("unknown", 1),
    ],
)
def test_each_bound_out_of_range_is_refused_and_nothing_is_minted(
    owner: Actor, field: str, value: Any
) -> None:
    response = owner.post(BASE, {field: value})

    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]
    assert not UploadToken.objects.exists()


def test_the_list_is_newest_first_in_keyset_pages(owner: Actor) -> None:
    ids = [mint(owner)["uploadToken"]["id"] for _ in range(3)]

    first = owner.get(BASE, {"limit": 2}).json()
    assert [t["id"] for t in first["data"]] == ids[::-1][:2]
    assert first["pagination"]["hasMore"] is True
    second = owner.get(BASE, {"limit": 2, "cursor": first["pagination"]["nextCursor"]}).json()
    assert [t["id"] for t in second["data"]] == ids[:1]
    assert second["pagination"] == {"hasMore": False, "nextCursor": None}


def test_revoke_answers_the_id_and_revoking_twice_succeeds(owner: Actor) -> None:
    token_id = mint(owner)["uploadToken"]["id"]

    first = owner.delete(f"{BASE}/{token_id}")
    again = owner.delete(f"{BASE}/{token_id}")

    assert first.status_code == again.status_code == 200
    assert first.json() == {"data": {"id": token_id, "revoked": True}}
    assert owner.get(f"{BASE}/{token_id}").json()["data"]["revokedAt"].endswith("Z")


@pytest.mark.parametrize("token_id", ["utk_00000000000000000000000000", "nope", "file_x"])
def test_an_unknown_id_is_upload_token_not_found(owner: Actor, token_id: str) -> None:
    for response in (owner.get(f"{BASE}/{token_id}"), owner.delete(f"{BASE}/{token_id}")):
        assert response.status_code == 404
        assert error_code(response) == "UPLOAD_TOKEN_NOT_FOUND"


def test_another_projects_token_is_missing_to_the_outsider(owner: Actor, outsider: Actor) -> None:
    token_id = mint(owner)["uploadToken"]["id"]

    assert error_code(outsider.get(f"{BASE}/{token_id}")) == "UPLOAD_TOKEN_NOT_FOUND"
    assert error_code(outsider.delete(f"{BASE}/{token_id}")) == "UPLOAD_TOKEN_NOT_FOUND"
    assert outsider.get(BASE).json()["data"] == []
    assert UploadToken.objects.get(id=token_id).revoked_at is None
