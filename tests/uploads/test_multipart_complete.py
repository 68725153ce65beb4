"""Completing a multipart upload: the published file and its checksum, every refusal of the
parts list, bytes that contradict the declared type, and a store that lost or already
assembled the upload."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from files.models import File, StoredObject
from storage_service import objectstore
from tests.factories import Actor, pdf_bytes
from tests.helpers import download, error_code
from tests.multipart import (
    BASE,
    PART,
    complete,
    events,
    provider_id,
    put_all,
    put_part,
    start_multipart,
)
from uploads.models import UploadSession

pytestmark = pytest.mark.django_db

# --- Complete -------------------------------------------------------------------------------


def test_complete_publishes_the_file_with_a_multipart_checksum(owner: Actor) -> None:
    payload = b"hello multipart"
    data = start_multipart(owner, len(payload))
    parts = put_all(data["upload"], payload)

    response = complete(owner, data["upload"]["id"], parts)

    assert response.status_code == 200
    file = response.json()
    assert (file["id"], file["status"], file["size"], file["version"]) == (
        data["file"]["id"],
        "uploaded",
        len(payload),
        1,
    )
    assert file["checksum"].startswith("etag:") and file["checksum"].endswith("-1")
    assert "uploadedAt" in file
    (completed,) = events(owner, "upload.completed")
    (uploaded,) = events(owner, "file.uploaded")
    assert completed.data["checksum"] == uploaded.data["checksum"] == file["checksum"]
    assert uploaded.data["size"] == len(payload)
    assert UploadSession.objects.get(id=data["upload"]["id"]).status == "completed"


def test_the_single_upload_complete_points_a_multipart_file_to_its_session(
    owner: Actor,
) -> None:
    payload = b"parts, not one PUT"
    data = start_multipart(owner, len(payload))
    parts = put_all(data["upload"], payload)
    file_id, upload_id = data["file"]["id"], data["upload"]["id"]

    refused = owner.post(f"/v1/files/{file_id}/complete")

    assert refused.status_code == 409
    assert error_code(refused) == "UPLOAD_IS_MULTIPART"
    assert refused.json()["error"]["details"] == {"uploadId": upload_id}
    assert upload_id in refused.json()["error"]["message"]
    # Nothing changed: the session still completes the file.
    assert owner.get(f"/v1/files/{file_id}").json()["data"]["status"] == "pending"
    assert complete(owner, upload_id, parts).status_code == 200


@pytest.mark.parametrize(
    "parts",
    [
        [{"partNumber": 1, "etag": "a"}, {"partNumber": 1, "etag": "a"}],
        [{"partNumber": 0, "etag": "a"}],
        [{"partNumber": "1", "etag": "a"}],
        [{"partNumber": 1.5, "etag": "a"}],
        [{"partNumber": 1, "etag": ""}],
        [{"partNumber": 1, "etag": 5}],
        [{"partNumber": 1}],
        [{"partNumber": 1, "etag": "a", "size": 3}],
        [1, 2],
        [],
        "all",
        None,
    ],
)
def test_complete_refuses_duplicate_or_malformed_parts(owner: Actor, parts) -> None:
    upload = start_multipart(owner, 2 * PART)["upload"]
    response = complete(owner, upload["id"], parts)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert "parts" in response.json()["error"]["details"]


@pytest.mark.parametrize(
    ("numbers", "detail"),
    [([1], "missingParts"), ([1, 3], "missingParts"), ([1, 2, 3, 4], "unexpectedParts")],
)
def test_a_wrong_count_or_a_gap_is_incomplete(owner: Actor, numbers: list, detail: str) -> None:
    upload = start_multipart(owner, 3 * PART)["upload"]
    response = complete(owner, upload["id"], [{"partNumber": n, "etag": "x"} for n in numbers])
    assert response.status_code == 409
    assert error_code(response) == "UPLOAD_PARTS_INCOMPLETE"
    assert detail in response.json()["error"]["details"]


def test_parts_the_store_does_not_hold_are_incomplete(owner: Actor) -> None:
    upload = start_multipart(owner, 5)["upload"]
    response = complete(owner, upload["id"], [{"partNumber": 1, "etag": "0" * 32}])
    assert response.status_code == 409
    assert error_code(response) == "UPLOAD_PARTS_INCOMPLETE"
    assert response.json()["error"]["details"] == {"missingParts": [1]}


def test_an_etag_the_store_does_not_hold_is_incomplete(owner: Actor) -> None:
    upload = start_multipart(owner, 5)["upload"]
    put_part(upload["parts"][0], b"12345")
    response = complete(owner, upload["id"], [{"partNumber": 1, "etag": '"' + "0" * 32 + '"'}])
    assert response.status_code == 409
    assert error_code(response) == "UPLOAD_PARTS_INCOMPLETE"
    assert response.json()["error"]["details"] == {"etagMismatch": [1]}
    assert UploadSession.objects.get(id=upload["id"]).status == "active"


def test_parts_of_the_wrong_length_are_a_size_mismatch_and_keep_the_session(owner: Actor) -> None:
    upload = start_multipart(owner, 5)["upload"]
    # A store that did not check the signed length would take this; ours refuses it at PUT,
    # so it is written with the service's own credentials.
    wrong = objectstore.client().upload_part(
        Bucket=objectstore.bucket(),
        Key=StoredObject.objects.get(
            id=UploadSession.objects.get(id=upload["id"]).stored_object_id
        ).storage_key,
        UploadId=provider_id(upload["id"]),
        PartNumber=1,
        Body=b"1234",
    )

    response = complete(owner, upload["id"], [{"partNumber": 1, "etag": wrong["ETag"]}])

    assert response.status_code == 409
    assert error_code(response) == "UPLOAD_SIZE_MISMATCH"
    assert response.json()["error"]["details"] == {
        "declaredSize": 5,
        "actualSize": 4,
        "parts": [{"partNumber": 1, "expectedSize": 5, "actualSize": 4}],
    }
    assert UploadSession.objects.get(id=upload["id"]).status == "active"
    assert File.objects.get(id=upload["fileId"]).status == "pending"


def test_bytes_that_contradict_the_declared_type_fail_the_upload(owner: Actor) -> None:
    payload = pdf_bytes()
    data = start_multipart(owner, len(payload), filename="x.png", content_type="image/png")
    parts = put_all(data["upload"], payload)

    response = complete(owner, data["upload"]["id"], parts)

    assert response.status_code == 409
    assert error_code(response) == "CONTENT_TYPE_MISMATCH"
    assert owner.get(f"/v1/files/{data['file']['id']}").json()["data"]["status"] == "failed"
    session = UploadSession.objects.get(id=data["upload"]["id"])
    assert (session.status, session.abort_reason) == ("aborted", "refused")
    (aborted,) = events(owner, "upload.aborted")
    assert aborted.data["reason"] == "refused"
    assert not events(owner, "file.uploaded")
    again = complete(owner, data["upload"]["id"], parts)
    assert again.status_code == 409 and error_code(again) == "UPLOAD_NOT_ACTIVE"


def test_complete_twice_then_abort_is_not_active(owner: Actor) -> None:
    data = start_multipart(owner, 3)
    parts = put_all(data["upload"], b"abc")
    assert complete(owner, data["upload"]["id"], parts).status_code == 200

    again = complete(owner, data["upload"]["id"], parts)
    abort = owner.delete(f"{BASE}/{data['upload']['id']}")
    fresh = owner.post(f"{BASE}/{data['upload']['id']}/parts", {"partNumbers": [1]})
    held = owner.get(f"{BASE}/{data['upload']['id']}/parts")

    for response in (again, abort, fresh, held):
        assert response.status_code == 409
        assert error_code(response) == "UPLOAD_NOT_ACTIVE"
    assert len(events(owner, "file.uploaded")) == 1


def test_an_expired_session_is_not_active(owner: Actor) -> None:
    data = start_multipart(owner, 3)
    parts = put_all(data["upload"], b"abc")
    UploadSession.objects.filter(id=data["upload"]["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    response = complete(owner, data["upload"]["id"], parts)
    assert response.status_code == 409
    assert error_code(response) == "UPLOAD_NOT_ACTIVE"


def test_complete_of_a_deleted_file_is_refused_until_restored(owner: Actor) -> None:
    data = start_multipart(owner, 3)
    parts = put_all(data["upload"], b"abc")
    owner.delete(f"/v1/files/{data['file']['id']}")

    refused = complete(owner, data["upload"]["id"], parts)
    owner.post(f"/v1/files/{data['file']['id']}/restore")
    done = complete(owner, data["upload"]["id"], parts)

    assert refused.status_code == 409 and error_code(refused) == "FILE_NOT_PENDING"
    assert done.status_code == 200 and done.json()["status"] == "uploaded"


def store_of(upload_id: str) -> tuple[str, str]:
    session = UploadSession.objects.select_related("stored_object").get(id=upload_id)
    return session.stored_object.storage_key, session.provider_upload_id


def test_complete_after_the_store_lost_the_upload_ends_the_session(owner: Actor) -> None:
    data = start_multipart(owner, 3)
    parts = put_all(data["upload"], b"abc")
    key, provider = store_of(data["upload"]["id"])
    objectstore.multipart_abort(key=key, upload_id=provider)  # e.g. a bucket lifecycle rule

    response = complete(owner, data["upload"]["id"], parts)

    assert response.status_code == 409 and error_code(response) == "UPLOAD_NOT_ACTIVE"
    session = UploadSession.objects.get(id=data["upload"]["id"])
    assert (session.status, session.abort_reason) == ("aborted", "lost")
    assert File.objects.get(id=data["file"]["id"]).status == "failed"


def test_complete_retried_after_the_store_assembled_publishes_that_object(owner: Actor) -> None:
    """A complete whose store call succeeded but whose transaction then failed left the
    session active and the object assembled: the retry publishes the object."""
    data = start_multipart(owner, 3)
    parts = put_all(data["upload"], b"abc")
    key, provider = store_of(data["upload"]["id"])
    held = objectstore.multipart_parts(key=key, upload_id=provider)
    assert held is not None
    objectstore.multipart_complete(key=key, upload_id=provider, parts=[(1, held[0].etag)])

    response = complete(owner, data["upload"]["id"], parts)

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "uploaded"
    assert response.json()["checksum"].endswith("-1")
    assert UploadSession.objects.get(id=data["upload"]["id"]).status == "completed"


def test_a_part_uploaded_twice_is_listed_once_and_complete_takes_the_named_one(
    owner: Actor,
) -> None:
    data = start_multipart(owner, 3)
    part = data["upload"]["parts"][0]
    first = put_part(part, b"abc").headers["ETag"]
    second = put_part(part, b"xyz").headers["ETag"]

    held = owner.get(f"{BASE}/{data['upload']['id']}/parts").json()["data"]["parts"]
    done = complete(owner, data["upload"]["id"], [{"partNumber": 1, "etag": second}])

    assert [p["partNumber"] for p in held] == [1]
    assert held[0]["etag"] in {first.strip('"'), second.strip('"')}
    assert done.status_code == 200, done.json()
    assert download(owner, data["file"]["id"]) == b"xyz"
