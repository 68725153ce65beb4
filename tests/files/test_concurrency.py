"""Concurrent transitions: one success and one 409, never two successes."""

from __future__ import annotations

from typing import Any

import pytest

from files.models import File, FileVersion
from tests.factories import Actor, jpeg_bytes, make_actor, png_bytes
from tests.helpers import at_once, start_upload, uploaded_file
from tests.storage import put_to

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    return make_actor("racer")


def test_two_completes_give_one_success_and_one_conflict(actor: Actor) -> None:
    data = png_bytes()
    started = start_upload(actor, data)
    put_to(started["upload"], data)
    url = f"/v1/files/{started['file']['id']}/complete"

    responses = at_once(lambda: actor.post(url), lambda: actor.post(url))

    assert sorted(r.status_code for r in responses) == [200, 409]
    conflict = next(r for r in responses if r.status_code == 409)
    assert conflict.json()["error"]["code"] == "FILE_NOT_PENDING"
    assert FileVersion.objects.filter(file_id=started["file"]["id"]).count() == 1


def test_two_replaces_give_one_success_and_one_conflict(actor: Actor) -> None:
    file = uploaded_file(actor)
    url = f"/v1/files/{file['id']}/replace"
    body = {"contentType": "image/jpeg", "size": len(jpeg_bytes())}

    responses = at_once(lambda: actor.post(url, body), lambda: actor.post(url, body))

    assert sorted(r.status_code for r in responses) == [200, 409]
    conflict = next(r for r in responses if r.status_code == 409)
    assert conflict.json()["error"]["code"] == "REPLACE_IN_PROGRESS"


def test_two_replace_completes_publish_one_version(actor: Actor) -> None:
    file = uploaded_file(actor)
    data = jpeg_bytes()
    started = actor.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": len(data)}
    ).json()
    put_to(started["upload"], data)
    url = f"/v1/files/{file['id']}/replace/complete"

    responses = at_once(lambda: actor.post(url), lambda: actor.post(url))

    assert sorted(r.status_code for r in responses) == [200, 409]
    assert File.objects.get(id=file["id"]).version == 2


def test_same_idempotency_key_at_once_creates_one_file(actor: Actor) -> None:
    body = {"filename": "once.png", "contentType": "image/png", "size": 3}

    def call() -> Any:
        return actor.post("/v1/files/upload", body, **{"Idempotency-Key": "race-1"})

    responses = at_once(call, call, call)

    assert [r.status_code for r in responses] == [201, 201, 201]
    assert len({r.json()["file"]["id"] for r in responses}) == 1
    assert File.objects.filter(project=actor.project).count() == 1


def test_delete_racing_restore_leaves_one_consistent_state(actor: Actor) -> None:
    file = uploaded_file(actor)
    actor.delete(f"/v1/files/{file['id']}")

    responses = at_once(
        lambda: actor.post(f"/v1/files/{file['id']}/restore"),
        lambda: actor.post(f"/v1/files/{file['id']}/restore"),
    )

    assert sorted(r.status_code for r in responses) == [200, 409]
    assert File.objects.get(id=file["id"]).status == "uploaded"
