"""The whole file lifecycle with real bytes through SeaweedFS presigned URLs."""

from __future__ import annotations

import pytest

from files.models import File, StoredObject
from files.services import files_purge_expired
from storage_service import objectstore
from tests.factories import Actor, jpeg_bytes, pdf_bytes, png_bytes
from tests.helpers import download, start_upload, uploaded_file
from tests.storage import put_to, storages_with

pytestmark = pytest.mark.e2e


def test_upload_complete_download_round_trip(owner: Actor) -> None:
    data = png_bytes()
    started = start_upload(owner, data, path="albums/2026", metadata={"album": "summer"})
    assert started["file"]["status"] == "pending"
    assert started["upload"]["method"] == "PUT"
    assert started["upload"]["headers"]["content-type"] == "image/png"

    assert put_to(started["upload"], data).status_code == 200
    completed = owner.post(f"/v1/files/{started['file']['id']}/complete")

    assert completed.status_code == 200
    body = completed.json()["data"]
    assert body["status"] == "uploaded"
    assert body["version"] == 1
    assert body["checksum"].startswith(("etag:", "sha256:"))
    assert body["uploadedAt"].endswith("Z")
    assert download(owner, started["file"]["id"]) == data


def test_store_refuses_bytes_of_another_length_or_type(owner: Actor) -> None:
    data = png_bytes()
    started = start_upload(owner, data)

    assert put_to(started["upload"], data + b"extra").status_code == 403
    assert put_to(started["upload"], data, **{"content-type": "image/jpeg"}).status_code == 403
    # Nothing arrived, so complete says so and the file is still pending.
    response = owner.post(f"/v1/files/{started['file']['id']}/complete")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "OBJECT_NOT_FOUND"
    assert owner.get(f"/v1/files/{started['file']['id']}").json()["data"]["status"] == "pending"


def test_presigned_put_cannot_overwrite_verified_bytes(owner: Actor) -> None:
    data = png_bytes()
    started = start_upload(owner, data)
    put_to(started["upload"], data)
    owner.post(f"/v1/files/{started['file']['id']}/complete")

    second = put_to(started["upload"], bytes(reversed(data)))

    assert second.status_code == 412
    assert download(owner, started["file"]["id"]) == data


def _write_directly(file_id: str, data: bytes, content_type: str) -> None:
    """Bytes written around the presigned URL, as a store that ignores the signed length would."""
    stored = File.objects.get(id=file_id).current_object
    objectstore.client().put_object(
        Bucket=objectstore.bucket(), Key=stored.storage_key, Body=data, ContentType=content_type
    )


def test_complete_refuses_bytes_whose_real_size_differs(owner: Actor) -> None:
    data = png_bytes()
    started = start_upload(owner, data)
    _write_directly(started["file"]["id"], data + b"\0" * 10, "image/png")

    response = owner.post(f"/v1/files/{started['file']['id']}/complete")

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "UPLOAD_SIZE_MISMATCH"
    assert error["details"] == {"declaredSize": len(data), "actualSize": len(data) + 10}
    assert owner.get(f"/v1/files/{started['file']['id']}").json()["data"]["status"] == "failed"


def test_complete_refuses_bytes_whose_real_type_contradicts_the_declared_one(owner: Actor) -> None:
    data = pdf_bytes()
    started = start_upload(owner, data, content_type="image/png")
    assert put_to(started["upload"], data).status_code == 200

    response = owner.post(f"/v1/files/{started['file']['id']}/complete")

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "CONTENT_TYPE_MISMATCH"
    assert error["details"]["detectedType"] == "application/pdf"
    file = owner.get(f"/v1/files/{started['file']['id']}").json()["data"]
    assert file["status"] == "failed"
    assert "uploadedAt" not in file


def test_generic_declared_type_is_accepted_and_the_real_type_recorded(owner: Actor) -> None:
    data = png_bytes()
    file = uploaded_file(owner, data, filename="blob.bin", content_type="application/octet-stream")

    assert File.objects.get(id=file["id"]).sniffed_type == "image/png"


def test_copy_shares_the_stored_object_and_downloads_the_same_bytes(owner: Actor) -> None:
    data = jpeg_bytes()
    original = uploaded_file(owner, data, filename="a.jpg", content_type="image/jpeg")

    response = owner.post(
        f"/v1/files/{original['id']}/copy", {"path": "copies", "filename": "b.jpg"}
    )

    assert response.status_code == 201
    copy = response.json()
    assert copy["id"] != original["id"]
    assert (copy["filename"], copy["path"], copy["status"]) == ("b.jpg", "copies", "uploaded")
    assert (
        File.objects.get(id=copy["id"]).current_object_id
        == File.objects.get(id=original["id"]).current_object_id
    )
    assert download(owner, copy["id"]) == data


def test_replace_publishes_a_new_version_and_keeps_the_old_object(owner: Actor) -> None:
    first = png_bytes()
    file = uploaded_file(owner, first)
    second = jpeg_bytes()

    started = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": len(second)}
    )
    assert started.status_code == 200
    # While the replacement is pending, the file still serves version 1.
    assert started.json()["file"]["version"] == 1
    assert download(owner, file["id"]) == first
    assert put_to(started.json()["upload"], second).status_code == 200

    completed = owner.post(f"/v1/files/{file['id']}/replace/complete")

    assert completed.status_code == 200
    body = completed.json()
    assert (body["version"], body["contentType"], body["size"]) == (2, "image/jpeg", len(second))
    assert download(owner, file["id"]) == second
    versions = File.objects.get(id=file["id"]).versions.order_by("version")
    old_key = versions[0].stored_object.storage_key
    assert (
        objectstore.client().get_object(Bucket=objectstore.bucket(), Key=old_key)["Body"].read()
        == first
    )


def test_delete_restore_then_purge(owner: Actor) -> None:
    data = png_bytes()
    file = uploaded_file(owner, data)

    deleted = owner.delete(f"/v1/files/{file['id']}")
    assert deleted.status_code == 200
    assert deleted.json() == {"data": {"id": file["id"], "deleted": True}}
    assert owner.get(f"/v1/files/{file['id']}").status_code == 404

    restored = owner.post(f"/v1/files/{file['id']}/restore")
    assert restored.status_code == 200
    assert restored.json()["status"] == "uploaded"
    assert download(owner, file["id"]) == data

    owner.delete(f"/v1/files/{file['id']}")
    report = files_purge_expired(grace_days=0)
    assert report.files == [file["id"]]
    key = File.objects.get(id=file["id"]).current_object.storage_key
    assert objectstore.head(key) is None

    again = owner.post(f"/v1/files/{file['id']}/restore")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "OBJECT_NOT_FOUND"


def test_purge_keeps_an_object_a_live_copy_still_uses(owner: Actor) -> None:
    data = png_bytes()
    original = uploaded_file(owner, data)
    copy = owner.post(f"/v1/files/{original['id']}/copy", {}).json()

    owner.delete(f"/v1/files/{original['id']}")
    files_purge_expired(grace_days=0)

    stored = File.objects.get(id=copy["id"]).current_object
    assert stored.state == StoredObject.State.LIVE
    assert download(owner, copy["id"]) == data

    # Once the copy is deleted and purged too, nothing needs the object: it goes.
    owner.delete(f"/v1/files/{copy['id']}")
    files_purge_expired(grace_days=0)
    assert objectstore.head(stored.storage_key) is None


def test_purge_removes_every_version(owner: Actor) -> None:
    first, second = png_bytes(), jpeg_bytes()
    file = uploaded_file(owner, first)
    started = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": len(second)}
    ).json()
    put_to(started["upload"], second)
    owner.post(f"/v1/files/{file['id']}/replace/complete")
    keys = [v.stored_object.storage_key for v in File.objects.get(id=file["id"]).versions.all()]
    assert len(keys) == 2

    owner.delete(f"/v1/files/{file['id']}")
    files_purge_expired(grace_days=0)

    assert [objectstore.head(key) for key in keys] == [None, None]


def test_public_endpoint_setting_signs_urls_for_the_public_host(owner: Actor, settings) -> None:
    settings.STORAGES = storages_with(public_endpoint_url="https://files.example.test")
    started = start_upload(owner, png_bytes())
    assert started["upload"]["url"].startswith("https://files.example.test/")
