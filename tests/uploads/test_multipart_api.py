"""The multipart endpoints: envelopes, validation and every error code, over real SeaweedFS.

Small files keep these fast (one part of a few bytes); the e2e tests move real megabytes.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from events.models import Event
from files.models import File, StoredObject
from files.services import files_expire_pending
from storage_service import objectstore
from tests.factories import Actor, pdf_bytes
from tests.helpers import download, error_code
from tests.multipart import PART, complete, provider_id, put_all, put_part, start_multipart
from tests.storage import storages_with
from uploads.models import UploadSession
from uploads.services import uploads_expire

pytestmark = pytest.mark.django_db

BASE = "/v1/uploads/multipart"


def events(actor: Actor, type: str) -> list[Event]:
    return list(Event.objects.filter(project=actor.project, type=type).order_by("created_at"))


# --- Initiate -------------------------------------------------------------------------------


def test_initiate_answers_a_pending_file_and_a_url_for_every_part(owner: Actor) -> None:
    size = 2 * PART + 5
    response = owner.post(
        BASE,
        {
            "filename": "video.mp4",
            "contentType": "video/mp4",
            "size": size,
            "path": "media/raw",
            "metadata": {"camera": "a"},
        },
    )

    assert response.status_code == 201
    data = response.json()["data"]
    file, upload = data["file"], data["upload"]
    assert file["status"] == "pending" and file["size"] == size and file["path"] == "media/raw"
    assert file["id"].startswith("file_") and "checksum" not in file
    assert upload["id"].startswith("upload_")
    assert upload["fileId"] == file["id"]
    assert (upload["status"], upload["partSize"], upload["partCount"]) == ("active", PART, 3)
    assert [p["partNumber"] for p in upload["parts"]] == [1, 2, 3]
    assert all(
        p["url"].startswith("http") and p["expiresAt"].endswith("Z") for p in upload["parts"]
    )
    assert upload["expiresAt"] > upload["parts"][0]["expiresAt"]
    assert owner.get(f"/v1/files/{file['id']}").json()["data"]["status"] == "pending"


def test_the_store_upload_id_is_in_no_field_and_no_event(owner: Actor) -> None:
    data = start_multipart(owner, 10)
    secret = provider_id(data["upload"]["id"])
    # Only inside the presigned URLs, which the store needs it in, opaque to the client.
    without_urls = {**data["upload"], "parts": [{**p, "url": ""} for p in data["upload"]["parts"]]}
    assert secret not in json.dumps({"file": data["file"], "upload": without_urls})
    assert secret not in json.dumps([e.data for e in Event.objects.filter(project=owner.project)])


def test_initiate_records_file_created_and_upload_initiated(owner: Actor) -> None:
    data = start_multipart(owner, PART + 1, filename="a.bin", path="x")

    (created,) = events(owner, "file.created")
    (initiated,) = events(owner, "upload.initiated")
    assert created.data["fileId"] == data["file"]["id"]
    assert initiated.data == {
        "projectId": owner.project.id,
        "organizationId": owner.project.organization_id,
        "uploadId": data["upload"]["id"],
        "fileId": data["file"]["id"],
        "filename": "a.bin",
        "path": "x",
        "contentType": "application/octet-stream",
        "size": PART + 1,
        "partSize": PART,
        "partCount": 2,
        "expiresAt": data["upload"]["expiresAt"],
        "uploadTokenId": None,
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"contentType": "a/b", "size": 1}, "filename"),
        ({"filename": "a", "size": 1}, "contentType"),
        ({"filename": "a", "contentType": "a/b"}, "size"),
        ({"filename": "a", "contentType": "a/b", "size": 0}, "size"),
        ({"filename": "a", "contentType": "a/b", "size": -1}, "size"),
        ({"filename": "a", "contentType": "a/b", "size": "10"}, "size"),
        ({"filename": "a", "contentType": "a/b", "size": 1.5}, "size"),
        ({"filename": "a/b", "contentType": "a/b", "size": 1}, "filename"),
        ({"filename": "a", "contentType": "nope", "size": 1}, "contentType"),
        ({"filename": "a", "contentType": "a/b", "size": 1, "path": "/x/"}, "path"),
        ({"filename": "a", "contentType": "a/b", "size": 1, "partSize": 5}, "partSize"),
    ],
)
def test_initiate_refuses_bad_bodies(owner: Actor, body: dict, field: str) -> None:
    response = owner.post(BASE, body)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]
    assert not UploadSession.objects.exists()


def test_initiate_up_to_the_limit_and_413_above_it(owner: Actor, settings) -> None:
    settings.SERVICE_MAX_MULTIPART_UPLOAD_BYTES = 100 * PART
    body = {"filename": "a", "contentType": "a/b"}

    at_limit = owner.post(BASE, {**body, "size": 100 * PART})
    above = owner.post(BASE, {**body, "size": 100 * PART + 1})

    assert at_limit.status_code == 201
    assert len(at_limit.json()["data"]["upload"]["parts"]) == 100
    assert above.status_code == 413
    assert error_code(above) == "FILE_TOO_LARGE"
    assert above.json()["error"]["details"] == {"maxSize": 100 * PART}
    assert UploadSession.objects.count() == 1


def test_the_default_limit_is_five_tib_in_at_most_ten_thousand_parts(owner: Actor) -> None:
    upload = start_multipart(owner, 5 * 1024**4)["upload"]
    assert len(upload["parts"]) == upload["partCount"] == 9987
    above = owner.post(BASE, {"filename": "a", "contentType": "a/b", "size": 5 * 1024**4 + 1})
    assert above.status_code == 413 and error_code(above) == "FILE_TOO_LARGE"


# --- Fresh URLs -----------------------------------------------------------------------------


def test_fresh_urls_for_the_asked_parts(owner: Actor) -> None:
    upload = start_multipart(owner, 3 * PART)["upload"]

    response = owner.post(f"{BASE}/{upload['id']}/parts", {"partNumbers": [3, 1]})

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["id"] == upload["id"]
    assert [p["partNumber"] for p in data["parts"]] == [3, 1]
    assert all("partNumber=" in p["url"] for p in data["parts"])


@pytest.mark.parametrize(
    "body",
    [
        {"partNumbers": [4]},
        {"partNumbers": [0]},
        {"partNumbers": [10_001]},
        {"partNumbers": [1, 1]},
        {"partNumbers": []},
        {"partNumbers": ["1"]},
        {"partNumbers": [True]},
        {"partNumbers": 1},
        {},
        {"partNumbers": [1], "extra": 1},
    ],
)
def test_fresh_urls_refuse_unknown_or_malformed_part_numbers(owner: Actor, body: dict) -> None:
    upload = start_multipart(owner, 3 * PART)["upload"]
    response = owner.post(f"{BASE}/{upload['id']}/parts", body)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


# --- Parts held -----------------------------------------------------------------------------


def test_parts_held_lists_what_the_store_has(owner: Actor) -> None:
    data = start_multipart(owner, PART + 3)
    upload = data["upload"]
    assert owner.get(f"{BASE}/{upload['id']}/parts").json() == {"data": {"parts": []}}

    put = put_part(upload["parts"][1], b"abc")
    assert put.status_code == 200

    held = owner.get(f"{BASE}/{upload['id']}/parts").json()["data"]["parts"]
    assert held == [{"partNumber": 2, "etag": put.headers["ETag"].strip('"'), "size": 3}]


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


# --- Abort ----------------------------------------------------------------------------------


def test_abort_fails_the_file_releases_the_parts_and_is_idempotent(owner: Actor) -> None:
    data = start_multipart(owner, PART + 1)
    upload_id = data["upload"]["id"]
    put_part(data["upload"]["parts"][0], b"\0" * PART)
    session = UploadSession.objects.select_related("stored_object").get(id=upload_id)

    first = owner.delete(f"{BASE}/{upload_id}")
    second = owner.delete(f"{BASE}/{upload_id}")

    assert first.status_code == second.status_code == 200
    assert first.json() == second.json() == {"data": {"id": upload_id, "aborted": True}}
    assert owner.get(f"/v1/files/{data['file']['id']}").json()["data"]["status"] == "failed"
    assert (
        objectstore.multipart_parts(
            key=session.stored_object.storage_key, upload_id=session.provider_upload_id
        )
        is None
    )
    (aborted,) = events(owner, "upload.aborted")
    assert aborted.data["reason"] == "client" and aborted.data["uploadId"] == upload_id
    refused = complete(
        owner, upload_id, [{"partNumber": 1, "etag": "x"}, {"partNumber": 2, "etag": "y"}]
    )
    assert refused.status_code == 409 and error_code(refused) == "UPLOAD_NOT_ACTIVE"


# --- Tenancy --------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["sibling", "outsider"])
def test_another_projects_upload_answers_like_a_missing_one(
    owner: Actor, who: str, request: pytest.FixtureRequest
) -> None:
    other: Actor = request.getfixturevalue(who)
    upload_id = start_multipart(owner, 3)["upload"]["id"]
    missing = "upload_" + "0" * 26

    for target in (upload_id, missing, "upload_bad", "file_x"):
        calls = [
            other.post(f"{BASE}/{target}/parts", {"partNumbers": [1]}),
            other.get(f"{BASE}/{target}/parts"),
            other.post(f"{BASE}/{target}/complete", {"parts": [{"partNumber": 1, "etag": "x"}]}),
            other.delete(f"{BASE}/{target}"),
        ]
        for response in calls:
            assert response.status_code == 404
            assert response.json() == {
                "error": {"code": "UPLOAD_NOT_FOUND", "message": "No such upload."}
            }
    assert UploadSession.objects.get(id=upload_id).status == "active"


# --- Sweeps ---------------------------------------------------------------------------------


def test_the_single_upload_sweep_leaves_multipart_files_alone(owner: Actor) -> None:
    data = start_multipart(owner, 3)
    files_expire_pending(now=timezone.now() + timedelta(days=365))
    assert File.objects.get(id=data["file"]["id"]).status == "pending"


def test_the_expiry_sweep_aborts_sessions_past_their_expiry(owner: Actor) -> None:
    stale = start_multipart(owner, 3)
    fresh = start_multipart(owner, 3)
    UploadSession.objects.filter(id=stale["upload"]["id"]).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )

    assert uploads_expire() == 1
    assert uploads_expire() == 0

    session = UploadSession.objects.get(id=stale["upload"]["id"])
    assert (session.status, session.abort_reason) == ("aborted", "expired")
    assert File.objects.get(id=stale["file"]["id"]).status == "failed"
    assert StoredObject.objects.get(id=session.stored_object_id).state == "discarded"
    assert UploadSession.objects.get(id=fresh["upload"]["id"]).status == "active"
    (aborted,) = events(owner, "upload.aborted")
    assert (aborted.data["uploadId"], aborted.data["reason"]) == (stale["upload"]["id"], "expired")


def test_the_store_being_down_is_a_503_and_changes_nothing(owner: Actor, settings) -> None:
    data = start_multipart(owner, 3)
    upload_id = data["upload"]["id"]
    # Nothing listens on the discard port.
    settings.STORAGES = storages_with(endpoint_url="http://127.0.0.1:9")
    responses = [
        owner.post(BASE, {"filename": "a", "contentType": "a/b", "size": 3}),
        owner.get(f"{BASE}/{upload_id}/parts"),
        complete(owner, upload_id, [{"partNumber": 1, "etag": "x"}]),
        owner.delete(f"{BASE}/{upload_id}"),
    ]

    for response in responses:
        assert response.status_code == 503
        assert error_code(response) == "STORAGE_UNAVAILABLE"
    assert UploadSession.objects.get().status == "active"
    assert File.objects.get().status == "pending"
    assert not events(owner, "upload.aborted")


def test_a_file_deleted_while_pending_comes_back_failed_once_its_upload_is_aborted(
    owner: Actor,
) -> None:
    data = start_multipart(owner, 3)
    owner.delete(f"/v1/files/{data['file']['id']}")

    assert owner.delete(f"{BASE}/{data['upload']['id']}").status_code == 200
    restored = owner.post(f"/v1/files/{data['file']['id']}/restore")

    assert restored.status_code == 200
    assert restored.json()["status"] == "failed"


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
