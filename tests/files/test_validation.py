"""Every bad input gets a 4xx with the contract's code, and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from files.models import File
from tests.factories import Actor, png_bytes, upload_body
from tests.helpers import error_code, start_upload, uploaded_file

GOOD = {"filename": "a.png", "contentType": "image/png", "size": 10}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"filename": None}, "filename"),
        ({"filename": ""}, "filename"),
        ({"filename": "x" * 256}, "filename"),
        ({"filename": "a/b.png"}, "filename"),
        ({"filename": "bad\x07name"}, "filename"),
        ({"filename": ".."}, "filename"),
        ({"filename": 12}, "filename"),
        ({"contentType": "png"}, "contentType"),
        ({"contentType": ""}, "contentType"),
        ({"size": -1}, "size"),
        ({"size": "10"}, "size"),
        ({"size": 10.5}, "size"),
        ({"size": True}, "size"),
        ({"path": "/leading"}, "path"),
        ({"path": "trailing/"}, "path"),
        ({"path": "a//b"}, "path"),
        ({"path": "a/../b"}, "path"),
        ({"path": "a/./b"}, "path"),
        ({"path": "x" * 1025}, "path"),
        ({"path": 5}, "path"),
        ({"metadata": []}, "metadata"),
        ({"metadata": "text"}, "metadata"),
        ({"metadata": {f"k{i}": i for i in range(65)}}, "metadata"),
        ({"metadata": {"big": "x" * 8200}}, "metadata"),
        ({"fileName": "typo.png"}, "fileName"),
    ],
)
def test_upload_refuses_a_bad_field(owner: Actor, change: dict[str, Any], field: str) -> None:
    response = owner.post("/v1/files/upload", {**GOOD, **change})

    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]
    assert File.objects.count() == 0


@pytest.mark.parametrize("missing", ["filename", "contentType", "size"])
def test_upload_requires_filename_content_type_and_size(owner: Actor, missing: str) -> None:
    body = {k: v for k, v in GOOD.items() if k != missing}

    response = owner.post("/v1/files/upload", body)

    assert response.status_code == 400
    assert response.json()["error"]["details"][missing]


def test_upload_refuses_a_body_that_is_not_an_object(owner: Actor) -> None:
    response = owner.post("/v1/files/upload", [GOOD])
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


def test_upload_refuses_malformed_json(owner: Actor) -> None:
    response = owner.client.post("/v1/files/upload", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


def test_upload_refuses_a_non_json_body(owner: Actor) -> None:
    response = owner.client.post("/v1/files/upload", "filename=a", content_type="text/plain")
    assert response.status_code == 415
    assert error_code(response) == "VALIDATION_ERROR"


def test_upload_above_the_single_put_limit_is_too_large(owner: Actor) -> None:
    response = owner.post("/v1/files/upload", {**GOOD, "size": 5 * 1024**3 + 1})
    assert response.status_code == 413
    assert error_code(response) == "FILE_TOO_LARGE"


def test_root_path_spellings_all_mean_root(owner: Actor) -> None:
    for path in ["", "/", None]:
        started = start_upload(owner, png_bytes(), path=path)
        assert started["file"]["path"] is None


@pytest.mark.parametrize(
    "query",
    [
        {"limit": 0},
        {"limit": 101},
        {"limit": "ten"},
        {"status": "gone"},
        {"sortBy": "id"},
        {"order": "up"},
        {"cursor": "not-a-cursor"},
        {"path": "/abs"},
        {"contentType": "nope"},
        {"search": "nul\x00"},
        {"search": "x" * 256},
        {"path": "a\x00b"},
    ],
)
def test_list_refuses_bad_query_parameters(owner: Actor, query: dict[str, Any]) -> None:
    response = owner.get("/v1/files", query)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


def test_list_refuses_a_cursor_from_another_sort(owner: Actor) -> None:
    for i in range(3):
        start_upload(owner, png_bytes(), filename=f"f{i}.png")
    first = owner.get("/v1/files", {"limit": 1}).json()

    response = owner.get(
        "/v1/files", {"limit": 1, "cursor": first["pagination"]["nextCursor"], "sortBy": "size"}
    )

    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


def test_list_refuses_a_tampered_cursor(owner: Actor) -> None:
    for i in range(2):
        start_upload(owner, png_bytes(), filename=f"f{i}.png")
    cursor = owner.get("/v1/files", {"limit": 1}).json()["pagination"]["nextCursor"]
    tampered = cursor[:-3] + ("aaa" if not cursor.endswith("aaa") else "bbb")

    response = owner.get("/v1/files", {"limit": 1, "cursor": tampered})

    assert response.status_code == 400


def test_patch_needs_at_least_one_field(owner: Actor) -> None:
    file = start_upload(owner)["file"]
    response = owner.patch(f"/v1/files/{file['id']}", {})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


@pytest.mark.parametrize(
    "body", [{"filename": "a/b"}, {"path": "../x"}, {"metadata": [1]}, {"x": 1}]
)
def test_patch_refuses_bad_fields(owner: Actor, body: dict[str, Any]) -> None:
    file = start_upload(owner)["file"]
    response = owner.patch(f"/v1/files/{file['id']}", body)
    assert response.status_code == 400
    assert owner.get(f"/v1/files/{file['id']}").json()["data"]["filename"] == file["filename"]


def test_an_integral_number_is_an_integer_as_json_schema_says(owner: Actor) -> None:
    """The document's "integer" is JSON Schema's: 600.0 is one (generated clients and fuzzers
    send such numbers); 600.5, "600" and true are not."""
    file = uploaded_file(owner)
    response = owner.post(f"/v1/files/{file['id']}/download-url", {"expiresInSeconds": 600.0})
    assert response.status_code == 200, response.json()
    started = owner.post("/v1/files/upload", upload_body(b"abc", size=3.0))
    assert started.status_code == 201, started.json()
    assert started.json()["file"]["size"] == 3


@pytest.mark.parametrize("seconds", [59, 86401, "600", 600.5, True])
def test_download_url_lifetime_must_be_60_to_86400_seconds(owner: Actor, seconds: Any) -> None:
    file = uploaded_file(owner)
    response = owner.post(f"/v1/files/{file['id']}/download-url", {"expiresInSeconds": seconds})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


@pytest.mark.parametrize(
    "body", [{}, {"contentType": "image/png"}, {"size": 3}, {"contentType": "x", "size": 3}]
)
def test_replace_needs_content_type_and_size(owner: Actor, body: dict[str, Any]) -> None:
    file = uploaded_file(owner)
    response = owner.post(f"/v1/files/{file['id']}/replace", body)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


def test_actions_on_a_pending_file_answer_file_not_uploaded(owner: Actor) -> None:
    file = start_upload(owner)["file"]
    for url, body in [
        (f"/v1/files/{file['id']}/download-url", {}),
        (f"/v1/files/{file['id']}/copy", {}),
        (f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": 3}),
    ]:
        response = owner.post(url, body)
        assert response.status_code == 409, url
        assert error_code(response) == "FILE_NOT_UPLOADED"


def test_complete_twice_answers_file_not_pending(owner: Actor) -> None:
    file = uploaded_file(owner)
    response = owner.post(f"/v1/files/{file['id']}/complete")
    assert response.status_code == 409
    assert error_code(response) == "FILE_NOT_PENDING"


def test_replace_while_one_is_pending_answers_replace_in_progress(owner: Actor) -> None:
    file = uploaded_file(owner)
    owner.post(f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": 3})
    response = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": 3}
    )
    assert response.status_code == 409
    assert error_code(response) == "REPLACE_IN_PROGRESS"


def test_replace_complete_without_a_replacement(owner: Actor) -> None:
    file = uploaded_file(owner)
    response = owner.post(f"/v1/files/{file['id']}/replace/complete")
    assert response.status_code == 409
    assert error_code(response) == "NO_REPLACE_IN_PROGRESS"


def test_restore_of_a_file_that_is_not_deleted(owner: Actor) -> None:
    file = uploaded_file(owner)
    response = owner.post(f"/v1/files/{file['id']}/restore")
    assert response.status_code == 409
    assert error_code(response) == "FILE_NOT_DELETED"


@pytest.mark.parametrize("file_id", ["file_00000000000000000000000000", "nope", "file_"])
def test_unknown_or_malformed_file_ids_are_not_found(owner: Actor, file_id: str) -> None:
    for method, url in [
        ("get", f"/v1/files/{file_id}"),
        ("delete", f"/v1/files/{file_id}"),
        ("post", f"/v1/files/{file_id}/complete"),
        ("post", f"/v1/files/{file_id}/restore"),
    ]:
        response = getattr(owner, method)(url)
        assert response.status_code == 404
        assert error_code(response) == "FILE_NOT_FOUND"


def test_deleted_files_read_as_not_found(owner: Actor) -> None:
    file = uploaded_file(owner)
    owner.delete(f"/v1/files/{file['id']}")
    for response in [
        owner.get(f"/v1/files/{file['id']}"),
        owner.patch(f"/v1/files/{file['id']}", {"filename": "x.png"}),
        owner.post(f"/v1/files/{file['id']}/copy", {}),
        owner.post(f"/v1/files/{file['id']}/download-url", {}),
        owner.delete(f"/v1/files/{file['id']}"),
    ]:
        assert response.status_code == 404
        assert error_code(response) == "FILE_NOT_FOUND"


def test_action_bodies_refuse_unknown_fields(owner: Actor) -> None:
    file = start_upload(owner)["file"]
    response = owner.post(f"/v1/files/{file['id']}/complete", {"force": True})
    assert response.status_code == 400


@pytest.mark.parametrize(
    "raw",
    [
        '{"filename": "a\\u0000.png", "contentType": "image/png", "size": 1}',
        '{"filename": "a.png", "contentType": "image/png", "size": 1,'
        ' "metadata": {"k": "\\u0000"}}',
        '{"filename": "\\ud800.png", "contentType": "image/png", "size": 1}',
    ],
)
def test_text_postgresql_cannot_store_is_a_validation_error(owner: Actor, raw: str) -> None:
    response = owner.client.post("/v1/files/upload", raw, content_type="application/json")
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert File.objects.count() == 0
