"""Multipart uploads end to end: megabytes PUT through presigned part URLs to SeaweedFS,
assembled, then downloaded and compared byte for byte."""

from __future__ import annotations

import hashlib
import subprocess
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from files.models import File
from storage_service import objectstore
from tests.e2e.test_worker_sweeps import wait_for
from tests.factories import make_actor
from tests.helpers import download, error_code
from tests.multipart import (
    MIB,
    PART,
    chunk,
    complete,
    provider_id,
    put_all,
    put_part,
    random_bytes,
    start_multipart,
)
from uploads.models import UploadSession
from uploads.tasks import expire_multipart_uploads

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

BASE = "/v1/uploads/multipart"


def multipart_etag(data: bytes, part_size: int = PART) -> str:
    digests = b"".join(
        hashlib.md5(data[i : i + part_size]).digest() for i in range(0, len(data), part_size)
    )
    count = -(-len(data) // part_size)
    return f"{hashlib.md5(digests).hexdigest()}-{count}"


def test_three_parts_uploaded_completed_and_downloaded_byte_for_byte() -> None:
    owner = make_actor("mp-three")
    data = random_bytes(2 * PART + 3 * MIB + 7)
    started = start_multipart(owner, len(data), filename="three.bin")
    assert started["upload"]["partCount"] == 3

    parts = put_all(started["upload"], data)
    response = complete(owner, started["upload"]["id"], parts)

    assert response.status_code == 200, response.json()
    file = response.json()
    assert (file["status"], file["size"]) == ("uploaded", len(data))
    assert file["checksum"] == f"etag:{multipart_etag(data)}"
    assert download(owner, file["id"]) == data


def test_a_resumed_upload() -> None:
    """Part 1 goes up; later the client gets fresh URLs, asks what the store holds, and
    uploads only the rest."""
    owner = make_actor("mp-resume")
    data = random_bytes(2 * PART + 1024)
    started = start_multipart(owner, len(data))
    upload_id = started["upload"]["id"]
    assert put_part(started["upload"]["parts"][0], chunk(data, 1)).status_code == 200

    fresh = owner.post(f"{BASE}/{upload_id}/parts", {"partNumbers": [1, 2, 3]})
    held = owner.get(f"{BASE}/{upload_id}/parts").json()["data"]["parts"]
    assert [p["partNumber"] for p in held] == [1]
    assert held[0]["size"] == PART
    for part in fresh.json()["data"]["parts"]:
        if part["partNumber"] not in {p["partNumber"] for p in held}:
            assert put_part(part, chunk(data, part["partNumber"])).status_code == 200
    held = owner.get(f"{BASE}/{upload_id}/parts").json()["data"]["parts"]
    assert [(p["partNumber"], p["size"]) for p in held] == [(1, PART), (2, PART), (3, 1024)]

    response = complete(
        owner, upload_id, [{"partNumber": p["partNumber"], "etag": p["etag"]} for p in held]
    )

    assert response.status_code == 200, response.json()
    assert download(owner, response.json()["id"]) == data


def test_a_wrong_size_last_part_is_refused_without_losing_the_session() -> None:
    owner = make_actor("mp-wrong")
    data = random_bytes(PART + 100)
    started = start_multipart(owner, len(data))
    upload = started["upload"]
    first = put_part(upload["parts"][0], chunk(data, 1))

    # The part URL signs its exact length: the store itself refuses other bytes.
    assert put_part(upload["parts"][1], chunk(data, 2) + b"extra").status_code == 403
    # A store that did not check would keep them; complete then refuses before assembling.
    session = UploadSession.objects.select_related("stored_object").get(id=upload["id"])
    wrong = objectstore.client().upload_part(
        Bucket=objectstore.bucket(),
        Key=session.stored_object.storage_key,
        UploadId=provider_id(upload["id"]),
        PartNumber=2,
        Body=chunk(data, 2) + b"extra",
    )
    parts = [
        {"partNumber": 1, "etag": first.headers["ETag"]},
        {"partNumber": 2, "etag": wrong["ETag"]},
    ]
    refused = complete(owner, upload["id"], parts)
    assert refused.status_code == 409
    assert error_code(refused) == "UPLOAD_SIZE_MISMATCH"
    assert refused.json()["error"]["details"]["parts"] == [
        {"partNumber": 2, "expectedSize": 100, "actualSize": 105}
    ]

    # The session is intact: PUT the right bytes to part 2 again and complete.
    right = put_part(upload["parts"][1], chunk(data, 2))
    assert right.status_code == 200
    parts[1]["etag"] = right.headers["ETag"]
    response = complete(owner, upload["id"], parts)
    assert response.status_code == 200, response.json()
    assert download(owner, response.json()["id"]) == data


def test_abort_twice_releases_the_parts_once() -> None:
    owner = make_actor("mp-abort")
    data = random_bytes(PART + 1)
    started = start_multipart(owner, len(data))
    upload_id = started["upload"]["id"]
    put_part(started["upload"]["parts"][0], chunk(data, 1))
    session = UploadSession.objects.select_related("stored_object").get(id=upload_id)

    assert owner.delete(f"{BASE}/{upload_id}").json() == {
        "data": {"id": upload_id, "aborted": True}
    }
    assert owner.delete(f"{BASE}/{upload_id}").status_code == 200

    key, provider = session.stored_object.storage_key, session.provider_upload_id
    assert objectstore.multipart_parts(key=key, upload_id=provider) is None
    late = put_part(started["upload"]["parts"][1], chunk(data, 2))
    assert late.status_code == 404  # NoSuchUpload: the URL is dead
    assert owner.get(f"/v1/files/{started['file']['id']}").json()["data"]["status"] == "failed"
    assert session.project.events.filter(type="upload.aborted").count() == 1


def test_the_store_pages_listed_parts() -> None:
    owner = make_actor("mp-pages")
    started = start_multipart(owner, 5 * PART)
    session = UploadSession.objects.select_related("stored_object").get(id=started["upload"]["id"])
    key, provider = session.stored_object.storage_key, session.provider_upload_id
    for number in range(1, 6):  # short parts: the store takes them, complete would not
        objectstore.client().upload_part(
            Bucket=objectstore.bucket(), Key=key, UploadId=provider, PartNumber=number, Body=b"p"
        )

    held = objectstore.multipart_parts(key=key, upload_id=provider, page_size=2)

    assert held is not None and [p.number for p in held] == [1, 2, 3, 4, 5]


def test_the_worker_sweep_aborts_expired_sessions(celery_worker: subprocess.Popen) -> None:
    owner = make_actor("mp-sweep")
    stale = start_multipart(owner, PART + 1)
    fresh = start_multipart(owner, PART + 1)
    put_part(stale["upload"]["parts"][0], random_bytes(PART))
    UploadSession.objects.filter(id=stale["upload"]["id"]).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    session = UploadSession.objects.select_related("stored_object").get(id=stale["upload"]["id"])

    expire_multipart_uploads.delay()

    wait_for(lambda: UploadSession.objects.get(id=session.id).status == "aborted")
    assert File.objects.get(id=stale["file"]["id"]).status == "failed"
    assert (
        objectstore.multipart_parts(
            key=session.stored_object.storage_key, upload_id=session.provider_upload_id
        )
        is None
    )
    assert UploadSession.objects.get(id=fresh["upload"]["id"]).status == "active"
    event = session.project.events.get(type="upload.aborted")
    assert event.data["reason"] == "expired"


def test_beat_schedules_the_multipart_sweep() -> None:
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "uploads.tasks.expire_multipart_uploads" in tasks


def test_parts_held_lists_more_than_one_page_of_the_store() -> None:
    """The store answers ListParts 1,000 parts at a time; the API lists them all."""
    owner = make_actor("mp-many")
    started = start_multipart(owner, 1001 * PART)
    session = UploadSession.objects.select_related("stored_object").get(id=started["upload"]["id"])
    key, provider = session.stored_object.storage_key, session.provider_upload_id
    s3 = objectstore.client()

    def upload(number: int) -> None:  # one byte each: the store takes short parts until complete
        s3.upload_part(
            Bucket=objectstore.bucket(), Key=key, UploadId=provider, PartNumber=number, Body=b"x"
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(upload, range(1, 1002)))

    held = owner.get(f"{BASE}/{session.id}/parts").json()["data"]["parts"]

    assert [p["partNumber"] for p in held] == list(range(1, 1002))
    assert {p["size"] for p in held} == {1}
    owner.delete(f"{BASE}/{session.id}")
