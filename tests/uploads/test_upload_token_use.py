"""An upload token as a page's only credential: single and multipart uploads within its
bounds, every refusal before anything is written, and the routes it may not call."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.limits import limits_set
from files.models import File, StoredObject
from tests.factories import Actor, pdf_bytes, png_bytes, upload_body
from tests.helpers import download, error_code, start_upload, uploaded_file
from tests.multipart import complete, put_all, start_multipart
from tests.storage import put_to
from tests.uploads.tokens import PAGE, Page, mint, page_for
from uploads.models import UploadSession, UploadToken
from webhooks.models import Event

pytestmark = pytest.mark.django_db


def nothing_written(actor: Actor) -> bool:
    return not File.objects.filter(project=actor.project).exists() and not (
        StoredObject.objects.filter(project=actor.project).exists()
    )


def started(page: Page, data: bytes, **body: Any) -> Any:
    return page.post("/v1/files/upload", upload_body(data, **body))


# --- A single upload, start to bytes -------------------------------------------------------


def test_a_page_uploads_and_completes_a_file_with_the_token_alone(owner: Actor) -> None:
    minted = mint(owner, path="avatars/u1", metadata={"userId": 1, "plan": "pro"})
    page = Page(minted["token"])
    data = png_bytes()

    start = started(page, data, metadata={"plan": "free", "alt": "me"})
    assert start.status_code == 201, start.json()
    file = start.json()["file"]
    assert put_to(start.json()["upload"], data).status_code == 200
    done = page.post(f"/v1/files/{file['id']}/complete")

    assert done.status_code == 200, done.json()
    token_id = minted["uploadToken"]["id"]
    assert file["uploadTokenId"] == token_id
    assert file["path"] == "avatars/u1"  # the token's folder when the request names none
    # The token's metadata over the request's own keys.
    assert file["metadata"] == {"plan": "pro", "alt": "me", "userId": 1}
    assert download(owner, file["id"]) == data
    assert owner.get(f"/v1/files/{file['id']}").json()["data"]["uploadTokenId"] == token_id
    for type in ("file.created", "file.uploaded"):
        event = Event.objects.get(project=owner.project, type=type)
        assert event.data["uploadTokenId"] == token_id
    assert UploadToken.objects.get(id=token_id).files_started == 1


def test_a_file_a_key_started_says_so(owner: Actor) -> None:
    file = uploaded_file(owner)
    assert file["uploadTokenId"] is None
    listed = owner.get("/v1/files").json()["data"]
    assert listed[0]["uploadTokenId"] is None
    assert (
        Event.objects.get(project=owner.project, type="file.uploaded").data["uploadTokenId"] is None
    )


# --- Bounds, each refused before anything is written ----------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"path": "avatars/u10"}, 403, "PATH_NOT_ALLOWED"),
        ({"path": "avatars"}, 403, "PATH_NOT_ALLOWED"),
        ({"path": "elsewhere/avatars/u1"}, 403, "PATH_NOT_ALLOWED"),
        ({"path": None}, 201, None),  # the token's folder
        ({"path": "avatars/u1/2026"}, 201, None),
        ({"content_type": "application/pdf", "filename": "a.pdf"}, 422, "CONTENT_TYPE_NOT_ALLOWED"),
        ({"content_type": "image/jpeg", "filename": "a.jpg"}, 201, None),
    ],
)
def test_the_folder_and_types_bound_each_start(
    owner: Actor, body: dict[str, Any], status: int, code: str | None
) -> None:
    page = page_for(owner, path="avatars/u1", allowedContentTypes=["image/*"])

    response = started(page, png_bytes(), **body)

    assert response.status_code == status, response.json()
    if code is not None:
        assert error_code(response) == code
        assert nothing_written(owner)


def test_a_size_over_the_token_is_file_too_large(owner: Actor) -> None:
    page = page_for(owner, maxFileSizeBytes=10)

    single = page.post("/v1/files/upload", {"filename": "a", "contentType": "a/b", "size": 11})
    multipart = page.post(
        "/v1/uploads/multipart", {"filename": "a", "contentType": "a/b", "size": 20 * 1024**2}
    )

    for response in (single, multipart):
        assert response.status_code == 413
        assert error_code(response) == "FILE_TOO_LARGE"
        assert response.json()["error"]["details"]["maxBytes"] == 10
    assert nothing_written(owner)


def test_a_path_of_dot_dot_is_refused_and_nothing_written(owner: Actor) -> None:
    page = page_for(owner, path="a")

    response = started(page, png_bytes(), path="a/..")

    assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"
    assert nothing_written(owner)


def test_the_third_file_past_max_files_two_is_exhausted(owner: Actor) -> None:
    minted = mint(owner, maxFiles=2)
    page = Page(minted["token"])

    answers = [started(page, png_bytes()).status_code for _ in range(2)]
    third = started(page, png_bytes())
    multipart = page.post(
        "/v1/uploads/multipart", {"filename": "a", "contentType": "a/b", "size": 10}
    )

    assert answers == [201, 201]
    for refused in (third, multipart):
        assert refused.status_code == 403 and error_code(refused) == "UPLOAD_TOKEN_EXHAUSTED"
    assert File.objects.filter(project=owner.project).count() == 2
    assert UploadToken.objects.get(id=minted["uploadToken"]["id"]).files_started == 2


def test_an_idempotent_replay_does_not_count_twice(owner: Actor) -> None:
    minted = mint(owner, maxFiles=2)
    page = Page(minted["token"])
    body = upload_body(png_bytes())

    first = page.post("/v1/files/upload", body, **{"Idempotency-Key": "k1"})
    again = page.post("/v1/files/upload", body, **{"Idempotency-Key": "k1"})

    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["file"]["id"] == first.json()["file"]["id"]
    assert UploadToken.objects.get(id=minted["uploadToken"]["id"]).files_started == 1
    assert started(page, png_bytes()).status_code == 201  # the second file is still there


def test_the_bytes_real_type_is_checked_again_at_complete(owner: Actor) -> None:
    # A generic declared type is allowed and not contradicted by PDF bytes; at complete the
    # real type is outside the token's list, so the file fails.
    page = page_for(owner, allowedContentTypes=["application/octet-stream", "image/*"])
    data = pdf_bytes()
    start = started(page, data, content_type="application/octet-stream", filename="x")
    assert start.status_code == 201
    assert put_to(start.json()["upload"], data).status_code == 200

    response = page.post(f"/v1/files/{start.json()['file']['id']}/complete")

    assert response.status_code == 422 and error_code(response) == "CONTENT_TYPE_NOT_ALLOWED"
    assert response.json()["error"]["details"]["detectedType"] == "application/pdf"
    assert File.objects.get(id=start.json()["file"]["id"]).status == File.Status.FAILED


def test_the_projects_own_limits_still_apply(owner: Actor) -> None:
    limits_set(project=owner.project, mode="test", changes={"max_file_size_bytes": 5})
    page = page_for(owner, maxFileSizeBytes=1000)

    response = started(page, png_bytes())

    assert response.status_code == 413 and error_code(response) == "FILE_TOO_LARGE"
    assert response.json()["error"]["details"]["maxBytes"] == 5


# --- What a token may not do ---------------------------------------------------------------


def test_every_other_route_is_insufficient_scope(owner: Actor) -> None:
    file = uploaded_file(owner)
    page = page_for(owner, maxFiles=5)
    refused = [
        page.get("/v1/files"),
        page.get(f"/v1/files/{file['id']}"),
        page.post(f"/v1/files/{file['id']}/download-url", {}),
        page.delete(f"/v1/files/{file['id']}"),
        page.post("/v1/upload-tokens", {}),
        page.get("/v1/upload-tokens"),
        page.get("/v1/me"),
        page.get("/v1/webhooks"),
        page.post(f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": 1}),
    ]

    for response in refused:
        assert response.status_code == 403, response.json()
        assert error_code(response) == "INSUFFICIENT_SCOPE"
    assert File.objects.get(id=file["id"]).status == File.Status.UPLOADED
    assert UploadToken.objects.count() == 1


def test_a_file_the_token_did_not_start_is_missing(owner: Actor, outsider: Actor) -> None:
    page = page_for(owner)
    other_page = page_for(owner)
    by_key = start_upload(owner)["file"]["id"]
    by_other = started(other_page, png_bytes()).json()["file"]["id"]
    foreign = start_upload(outsider)["file"]["id"]

    for file_id in (by_key, by_other, foreign):
        response = page.post(f"/v1/files/{file_id}/complete")
        assert response.status_code == 404 and error_code(response) == "FILE_NOT_FOUND"
    assert File.objects.filter(status=File.Status.PENDING).count() == 3


def test_a_revoked_or_expired_token_is_unauthenticated(owner: Actor) -> None:
    minted = mint(owner, maxFiles=5)
    page = Page(minted["token"])
    data = png_bytes()
    start = started(page, data)
    assert put_to(start.json()["upload"], data).status_code == 200
    token_id = minted["uploadToken"]["id"]
    assert owner.delete(f"/v1/upload-tokens/{token_id}").status_code == 200

    replayed = started(page, png_bytes())
    completed = page.post(f"/v1/files/{start.json()['file']['id']}/complete")

    for response in (replayed, completed):
        assert response.status_code == 401 and error_code(response) == "UNAUTHENTICATED"
        assert response["WWW-Authenticate"] == "Bearer"
    assert File.objects.filter(project=owner.project).count() == 1
    assert File.objects.get().status == File.Status.PENDING
    # The owner's server may still complete what the page uploaded.
    assert owner.post(f"/v1/files/{start.json()['file']['id']}/complete").status_code == 200

    expired = mint(owner)
    UploadToken.objects.filter(id=expired["uploadToken"]["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    response = started(Page(expired["token"]), png_bytes())
    assert response.status_code == 401 and error_code(response) == "UNAUTHENTICATED"


@pytest.mark.parametrize("token", ["ut_unknown", "ut_" + "A" * 43])
def test_an_unknown_token_is_unauthenticated(owner: Actor, token: str) -> None:
    response = started(Page(token), png_bytes())
    assert response.status_code == 401 and error_code(response) == "UNAUTHENTICATED"


@pytest.mark.parametrize("origin", ["https://evil.example", "https://app.example.evil", None])
def test_a_forged_or_missing_origin_is_refused(owner: Actor, origin: str | None) -> None:
    page = page_for(owner, origin=origin, allowedOrigins=[PAGE])

    response = started(page, png_bytes())

    assert response.status_code == 403 and error_code(response) == "ORIGIN_NOT_ALLOWED"
    assert nothing_written(owner)
    assert started(page_for(owner, allowedOrigins=[PAGE]), png_bytes()).status_code == 201


# --- Multipart ------------------------------------------------------------------------------


def test_a_page_uploads_in_parts_and_only_its_own_session_answers(owner: Actor) -> None:
    page = page_for(owner, path="videos")
    other = page_for(owner)
    data = b"x" * 1000
    start = page.post(
        "/v1/uploads/multipart",
        {"filename": "v.bin", "contentType": "application/octet-stream", "size": len(data)},
    )
    assert start.status_code == 201, start.json()
    upload = start.json()["data"]["upload"]
    base = f"/v1/uploads/multipart/{upload['id']}"

    for response in (
        other.get(f"{base}/parts"),
        other.post(f"{base}/parts", {"partNumbers": [1]}),
        other.post(f"{base}/complete", {"parts": [{"partNumber": 1, "etag": "e"}]}),
        other.delete(base),
    ):
        assert response.status_code == 404 and error_code(response) == "UPLOAD_NOT_FOUND"
    parts = put_all(upload, data)
    assert page.get(f"{base}/parts").status_code == 200
    assert page.post(f"{base}/parts", {"partNumbers": [1]}).status_code == 200
    done = page.post(f"{base}/complete", {"parts": parts})

    assert done.status_code == 200, done.json()
    assert done.json()["uploadTokenId"] == start.json()["data"]["file"]["uploadTokenId"]
    assert done.json()["path"] == "videos"
    assert download(owner, done.json()["id"]) == data
    initiated = Event.objects.get(project=owner.project, type="upload.initiated")
    assert initiated.data["uploadTokenId"] == done.json()["uploadTokenId"]


def test_a_page_aborts_its_own_session_but_not_a_keys(owner: Actor) -> None:
    page = page_for(owner)
    by_key = start_multipart(owner, 10)["upload"]["id"]
    own = page.post(
        "/v1/uploads/multipart", {"filename": "a", "contentType": "a/b", "size": 10}
    ).json()["data"]["upload"]["id"]

    assert error_code(page.delete(f"/v1/uploads/multipart/{by_key}")) == "UPLOAD_NOT_FOUND"
    assert page.delete(f"/v1/uploads/multipart/{own}").status_code == 200
    assert UploadSession.objects.get(id=by_key).status == "active"
    assert complete(owner, by_key, []).status_code != 404  # still the key's to finish


def test_a_token_replaying_a_keys_idempotency_key_learns_nothing(owner: Actor) -> None:
    body = upload_body(png_bytes())
    by_key = owner.post("/v1/files/upload", body, **{"Idempotency-Key": "shared"})
    multipart = {"filename": "a", "contentType": "a/b", "size": 10}
    session = owner.post("/v1/uploads/multipart", multipart, **{"Idempotency-Key": "parts"})
    page = page_for(owner, maxFiles=5)

    replayed = page.post("/v1/files/upload", body, **{"Idempotency-Key": "shared"})
    replayed_parts = page.post("/v1/uploads/multipart", multipart, **{"Idempotency-Key": "parts"})

    assert by_key.status_code == session.status_code == 201
    for refused in (replayed, replayed_parts):
        assert refused.status_code == 409 and error_code(refused) == "IDEMPOTENCY_KEY_REUSED"
        assert by_key.json()["file"]["id"] not in refused.content.decode()
    assert File.objects.filter(project=owner.project).count() == 2
