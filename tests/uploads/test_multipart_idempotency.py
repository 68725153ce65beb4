"""Idempotency-Key on POST /v1/uploads/multipart: a retried start never makes two sessions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from files.models import File, IdempotencyRecord
from storage_service import objectstore
from tests.factories import Actor
from tests.helpers import at_once, error_code
from tests.multipart import BASE, PART, complete, put_all, random_bytes
from uploads.models import UploadSession

pytestmark = pytest.mark.django_db


SIZE = 2 * PART + 3
BODY = {"filename": "video.mp4", "contentType": "video/mp4", "size": SIZE}


def store_uploads(actor: Actor) -> list[str]:
    """The store's multipart uploads in progress under the project's keys."""
    listed = objectstore.client().list_multipart_uploads(
        Bucket=objectstore.bucket(), Prefix=f"{actor.project.id}/"
    )
    return [upload["UploadId"] for upload in listed.get("Uploads", [])]


def test_same_key_and_body_replays_the_same_session(owner: Actor) -> None:
    first = owner.post(BASE, BODY, **{"Idempotency-Key": "mp-1"})
    again = owner.post(BASE, BODY, **{"Idempotency-Key": "mp-1"})

    assert (first.status_code, again.status_code) == (201, 201)
    assert "Idempotent-Replayed" not in first
    assert again["Idempotent-Replayed"] == "true"
    one, two = first.json()["data"], again.json()["data"]
    assert two["file"]["id"] == one["file"]["id"]
    assert two["upload"]["id"] == one["upload"]["id"]
    assert [p["partNumber"] for p in two["upload"]["parts"]] == [1, 2, 3]
    assert {k: v for k, v in two["upload"].items() if k != "parts"} == {
        k: v for k, v in one["upload"].items() if k != "parts"
    }
    assert (File.objects.count(), UploadSession.objects.count()) == (1, 1)
    assert len(store_uploads(owner)) == 1  # a replay starts nothing at the store


def test_the_replayed_part_urls_upload_and_complete(owner: Actor) -> None:
    data = random_bytes(SIZE)
    owner.post(BASE, BODY, **{"Idempotency-Key": "mp-urls"})
    again = owner.post(BASE, BODY, **{"Idempotency-Key": "mp-urls"}).json()["data"]

    done = complete(owner, again["upload"]["id"], put_all(again["upload"], data))

    assert done.status_code == 200, done.json()
    assert done.json()["status"] == "uploaded"


def test_a_replay_after_complete_answers_the_file_as_it_is_now(owner: Actor) -> None:
    data = random_bytes(SIZE)
    started = owner.post(BASE, BODY, **{"Idempotency-Key": "mp-done"}).json()["data"]
    complete(owner, started["upload"]["id"], put_all(started["upload"], data))

    again = owner.post(BASE, BODY, **{"Idempotency-Key": "mp-done"})

    assert again.status_code == 201
    assert again.json()["data"]["file"]["status"] == "uploaded"
    assert again.json()["data"]["upload"]["status"] == "completed"
    assert File.objects.count() == 1


def test_same_key_with_another_body_is_refused(owner: Actor) -> None:
    owner.post(BASE, BODY, **{"Idempotency-Key": "mp-2"})
    response = owner.post(BASE, {**BODY, "size": 5}, **{"Idempotency-Key": "mp-2"})

    assert response.status_code == 409
    assert error_code(response) == "IDEMPOTENCY_KEY_REUSED"
    assert UploadSession.objects.count() == 1
    assert len(store_uploads(owner)) == 1


def test_a_key_of_a_single_upload_is_refused_here_and_the_other_way(owner: Actor) -> None:
    single = {"filename": "a.bin", "contentType": "application/octet-stream", "size": 3}
    assert owner.post("/v1/files/upload", single, **{"Idempotency-Key": "k"}).status_code == 201
    assert owner.post(BASE, BODY, **{"Idempotency-Key": "mp"}).status_code == 201

    # The same body on the other route is another request, not a retry.
    here = owner.post(BASE, single, **{"Idempotency-Key": "k"})
    there = owner.post("/v1/files/upload", BODY, **{"Idempotency-Key": "mp"})

    assert (here.status_code, there.status_code) == (409, 409)
    assert error_code(here) == error_code(there) == "IDEMPOTENCY_KEY_REUSED"
    assert (File.objects.count(), UploadSession.objects.count()) == (2, 1)


def test_a_malformed_key_is_refused_before_anything_starts(owner: Actor) -> None:
    for bad in ["x" * 256, "caf\u00e9", "two words"]:
        response = owner.post(BASE, BODY, **{"Idempotency-Key": bad})
        assert response.status_code == 400
        assert error_code(response) == "VALIDATION_ERROR"
        assert "Idempotency-Key" in response.json()["error"]["details"]
    assert UploadSession.objects.count() == 0
    assert store_uploads(owner) == []


def test_keys_belong_to_their_project(owner: Actor, outsider: Actor) -> None:
    mine = owner.post(BASE, BODY, **{"Idempotency-Key": "shared"}).json()["data"]
    theirs = outsider.post(BASE, BODY, **{"Idempotency-Key": "shared"})

    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs
    assert theirs.json()["data"]["upload"]["id"] != mine["upload"]["id"]


def test_a_key_older_than_a_day_starts_a_new_session(owner: Actor) -> None:
    owner.post(BASE, BODY, **{"Idempotency-Key": "mp-3"})
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))

    response = owner.post(BASE, {**BODY, "size": 9}, **{"Idempotency-Key": "mp-3"})

    assert response.status_code == 201 and "Idempotent-Replayed" not in response
    assert UploadSession.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_with_one_key_make_one_session(owner: Actor) -> None:
    responses = at_once(*[lambda: owner.post(BASE, BODY, **{"Idempotency-Key": "race"})] * 4)

    assert [r.status_code for r in responses] == [201] * 4
    assert len({r.json()["data"]["upload"]["id"] for r in responses}) == 1
    assert sorted(r.get("Idempotent-Replayed", "") for r in responses) == [
        "",
        "true",
        "true",
        "true",
    ]
    assert (File.objects.count(), UploadSession.objects.count()) == (1, 1)
    # The losers' store uploads were aborted: no parts can be left behind at the store.
    assert len(store_uploads(owner)) == 1
