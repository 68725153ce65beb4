"""What a client sees from each Files endpoint, beyond the lifecycle e2e tests."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlparse

from django.utils import timezone

from files.models import File, StoredObject
from tests.factories import Actor, jpeg_bytes, pdf_bytes, png_bytes
from tests.helpers import download, error_code, start_upload, uploaded_file
from tests.storage import get_from, put_to


def test_patch_replaces_metadata_and_null_clears_it(owner: Actor) -> None:
    file = start_upload(owner, metadata={"a": 1, "b": 2})["file"]

    replaced = owner.patch(f"/v1/files/{file['id']}", {"metadata": {"c": 3}}).json()
    cleared = owner.patch(f"/v1/files/{file['id']}", {"metadata": None}).json()

    assert replaced["metadata"] == {"c": 3}  # replaced, not merged
    assert cleared["metadata"] is None


def test_patch_moves_to_the_root_with_null_or_slash(owner: Actor) -> None:
    file = start_upload(owner, path="a/b")["file"]
    assert owner.patch(f"/v1/files/{file['id']}", {"path": "/"}).json()["path"] is None
    owner.patch(f"/v1/files/{file['id']}", {"path": "c"})
    assert owner.patch(f"/v1/files/{file['id']}", {"path": None}).json()["path"] is None


def test_copy_defaults_to_the_source_name_and_folder(owner: Actor) -> None:
    source = uploaded_file(owner, filename="a.png", path="x", metadata={"k": "v"})

    copy = owner.post(f"/v1/files/{source['id']}/copy", {}).json()
    to_root = owner.post(f"/v1/files/{source['id']}/copy", {"path": None}).json()

    assert (copy["filename"], copy["path"], copy["metadata"]) == ("a.png", "x", {"k": "v"})
    assert (copy["checksum"], copy["size"], copy["version"]) == (
        source["checksum"],
        source["size"],
        1,
    )
    assert to_root["path"] is None


def test_download_url_honours_the_lifetime_and_names_the_file(owner: Actor) -> None:
    data = pdf_bytes()
    file = uploaded_file(owner, data, filename="Tax report é.pdf", content_type="application/pdf")

    response = owner.post(f"/v1/files/{file['id']}/download-url", {"expiresInSeconds": 120})

    body = response.json()
    assert set(body) == {"url", "expiresAt"}
    assert parse_qs(urlparse(body["url"]).query)["X-Amz-Expires"] == ["120"]
    fetched = get_from(body["url"])
    assert fetched.content == data
    assert fetched.headers["Content-Type"] == "application/pdf"
    assert "filename*=UTF-8''Tax%20report%20%C3%A9.pdf" in fetched.headers["Content-Disposition"]


def test_a_refused_replacement_leaves_the_file_as_it_was(owner: Actor) -> None:
    original = png_bytes()
    file = uploaded_file(owner, original)
    wrong = pdf_bytes()
    started = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": len(wrong)}
    ).json()
    assert put_to(started["upload"], wrong).status_code == 200

    refused = owner.post(f"/v1/files/{file['id']}/replace/complete")

    assert refused.status_code == 409
    assert error_code(refused) == "CONTENT_TYPE_MISMATCH"
    now = owner.get(f"/v1/files/{file['id']}").json()["data"]
    assert (now["version"], now["contentType"], now["checksum"]) == (
        1,
        "image/png",
        file["checksum"],
    )
    assert download(owner, file["id"]) == original
    # The replacement is gone, so another may start at once.
    again = owner.post(f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": 3})
    assert again.status_code == 200


def test_replace_complete_before_the_bytes_arrive(owner: Actor) -> None:
    file = uploaded_file(owner)
    owner.post(f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": 3})

    response = owner.post(f"/v1/files/{file['id']}/replace/complete")

    assert response.status_code == 409
    assert error_code(response) == "OBJECT_NOT_FOUND"
    # Still pending: the bytes can still be PUT and the replacement completed.
    assert File.objects.get(id=file["id"]).replacement_object is not None


def test_an_expired_replacement_no_longer_blocks_a_new_one(owner: Actor) -> None:
    file = uploaded_file(owner)
    owner.post(f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": 3})
    stale = File.objects.get(id=file["id"]).replacement_object
    assert stale is not None
    StoredObject.objects.filter(id=stale.id).update(
        upload_expires_at=timezone.now() - timedelta(seconds=1)
    )
    data = jpeg_bytes()

    started = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": len(data)}
    )

    assert started.status_code == 200
    assert StoredObject.objects.get(id=stale.id).state == StoredObject.State.DISCARDED
    put_to(started.json()["upload"], data)
    assert owner.post(f"/v1/files/{file['id']}/replace/complete").json()["version"] == 2


def test_deleting_drops_a_pending_replacement(owner: Actor) -> None:
    file = uploaded_file(owner)
    owner.post(f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": 3})
    owner.delete(f"/v1/files/{file['id']}")
    owner.post(f"/v1/files/{file['id']}/restore")

    response = owner.post(f"/v1/files/{file['id']}/replace/complete")

    assert error_code(response) == "NO_REPLACE_IN_PROGRESS"


def test_a_pending_file_deleted_and_restored_is_pending_again(owner: Actor) -> None:
    file = start_upload(owner)["file"]
    owner.delete(f"/v1/files/{file['id']}")
    restored = owner.post(f"/v1/files/{file['id']}/restore").json()
    assert restored["status"] == "pending"
    assert "deletedAt" not in restored


def test_upload_answer_has_the_contract_shape(owner: Actor) -> None:
    response = owner.post(
        "/v1/files/upload",
        {"filename": "a.png", "contentType": "image/png", "size": 3, "path": "p", "metadata": {}},
    )
    body = response.json()
    assert set(body) == {"file", "upload"}
    assert set(body["upload"]) == {"url", "method", "headers", "expiresAt"}
    assert set(body["file"]) == {
        "id", "filename", "path", "contentType", "size", "status", "version", "metadata",
        "createdAt", "updatedAt", "expiresAt", "placeholder", "uploadTokenId",
    }  # fmt: skip
    assert body["file"]["version"] == 1
    assert body["file"]["expiresAt"] is None


def test_the_single_read_answers_what_the_list_answers(owner: Actor) -> None:
    """GET /v1/files/<id> answers, field by field, what the list answers, metadata an
    object."""
    metadata = {"team": "ops", "tags": ["a", "b"], "nested": {"n": 1}, "none": None}
    file = uploaded_file(owner, filename="m.png", path="p", metadata=metadata)

    single = owner.get(f"/v1/files/{file['id']}").json()["data"]
    listed = owner.get("/v1/files", {"path": "p"}).json()["data"]

    assert single["metadata"] == metadata
    assert single == listed[0]
    assert owner.get(f"/v1/files/{file['id']}").json()["data"] == single
