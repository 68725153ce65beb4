"""The multipart endpoints but complete: start, fresh part URLs, the parts held, abort, and
another project's upload, with their envelopes, validation and error codes, over real
SeaweedFS.

Small files keep these fast (one part of a few bytes); the e2e tests move real megabytes.
"""

from __future__ import annotations

import json

import pytest

from events.models import Event
from storage_service import objectstore
from tests.factories import Actor
from tests.helpers import error_code
from tests.multipart import (
    BASE,
    PART,
    complete,
    events,
    provider_id,
    put_part,
    start_multipart,
)
from uploads.models import UploadSession

pytestmark = pytest.mark.django_db

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


def test_a_file_deleted_while_pending_comes_back_failed_once_its_upload_is_aborted(
    owner: Actor,
) -> None:
    data = start_multipart(owner, 3)
    owner.delete(f"/v1/files/{data['file']['id']}")

    assert owner.delete(f"{BASE}/{data['upload']['id']}").status_code == 200
    restored = owner.post(f"/v1/files/{data['file']['id']}/restore")

    assert restored.status_code == 200
    assert restored.json()["status"] == "failed"
