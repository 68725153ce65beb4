"""Files that delete themselves: expiresAt on upload, multipart start and PATCH, and the
expiry sweep that deletes them as DELETE would, with file.expired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from events.models import Event
from files.models import File
from files.services import files_expire_due
from storage_service.timefmt import iso, iso_required
from tests.factories import Actor, make_actor, png_bytes, upload_body
from tests.helpers import at_once, error_code, start_upload, uploaded_file


def later(**delta: float) -> str:
    return iso_required(timezone.now() + timedelta(**delta))


def expire_now(*file_ids: str) -> None:
    File.objects.filter(id__in=file_ids).update(expires_at=timezone.now() - timedelta(seconds=1))


def events(actor: Actor, type: str) -> list[Event]:
    return list(Event.objects.filter(project=actor.project, type=type).order_by("created_at"))


def test_expires_at_is_set_on_upload_and_shown_everywhere(owner: Actor) -> None:
    when = later(days=7)
    started = start_upload(owner, expiresAt=when)
    plain = start_upload(owner)

    assert started["file"]["expiresAt"] == when
    assert plain["file"]["expiresAt"] is None
    file_id = started["file"]["id"]
    assert owner.get(f"/v1/files/{file_id}").json()["data"]["expiresAt"] == when
    listed = {f["id"]: f["expiresAt"] for f in owner.get("/v1/files").json()["data"]}
    assert listed == {file_id: when, plain["file"]["id"]: None}


def test_expires_at_is_set_on_multipart_start(owner: Actor) -> None:
    when = later(hours=1)
    response = owner.post(
        "/v1/uploads/multipart",
        {"filename": "big.bin", "contentType": "application/octet-stream", "size": 10 << 20,
         "expiresAt": when},
    )  # fmt: skip

    assert response.status_code == 201, response.json()
    assert response.json()["data"]["file"]["expiresAt"] == when


def test_patch_changes_and_clears_the_expiry(owner: Actor) -> None:
    file = uploaded_file(owner)
    when = later(days=1)

    changed = owner.patch(f"/v1/files/{file['id']}", {"expiresAt": when})
    assert changed.status_code == 200 and changed.json()["expiresAt"] == when
    # An offset of +00:00 and microseconds are UTC too; the answer is in the API's format.
    exact = datetime.now(UTC) + timedelta(days=2)
    changed = owner.patch(f"/v1/files/{file['id']}", {"expiresAt": exact.isoformat()})
    assert changed.json()["expiresAt"] == iso_required(exact)
    cleared = owner.patch(f"/v1/files/{file['id']}", {"expiresAt": None})
    assert cleared.status_code == 200 and cleared.json()["expiresAt"] is None
    assert File.objects.get(id=file["id"]).expires_at is None


@pytest.mark.parametrize(
    "value",
    [
        "2020-01-01T00:00:00Z",  # the past
        "2999-01-01T00:00:00Z",  # more than 10 years ahead
        "9999-12-31T23:59:59.999999Z",
        "2030-01-01T00:00:00",  # no zone
        "2030-01-01T00:00:00+02:00",  # not UTC
        "2030-01-01",
        "2030-13-01T00:00:00Z",
        "2030-02-30T00:00:00Z",
        "2030-01-01T00:00:00.1234567Z",
        "2030-01-01 00:00:00Z",
        "2030-01-01T00:00:00Z\n",
        "now",
        "",
        "x" * 100_000,
        1893456000,
        True,
        {"at": "2030-01-01T00:00:00Z"},
        ["2030-01-01T00:00:00Z"],
    ],
)
def test_an_expiry_that_is_not_a_future_utc_time_within_ten_years_is_refused(
    owner: Actor, value: Any
) -> None:
    file = uploaded_file(owner)

    responses = [
        owner.patch(f"/v1/files/{file['id']}", {"expiresAt": value}),
        owner.post("/v1/files/upload", upload_body(png_bytes(), expiresAt=value)),
        owner.post(
            "/v1/uploads/multipart",
            {"filename": "b", "contentType": "image/png", "size": 10 << 20, "expiresAt": value},
        ),
    ]

    for response in responses:
        assert response.status_code == 400, response.json()
        assert error_code(response) == "VALIDATION_ERROR"
        assert "expiresAt" in response.json()["error"]["details"]
    assert File.objects.get(id=file["id"]).expires_at is None
    assert File.objects.for_tenant(owner.tenant).count() == 1


def test_the_sweep_deletes_expired_files_as_delete_would_with_file_expired(owner: Actor) -> None:
    due = uploaded_file(owner, expiresAt=later(days=1))
    pending = start_upload(owner, expiresAt=later(days=1))["file"]
    not_yet = uploaded_file(owner, expiresAt=later(days=1))
    never = uploaded_file(owner)
    expire_now(due["id"], pending["id"])
    expired_at = iso(File.objects.get(id=due["id"]).expires_at)

    assert files_expire_due() == 2
    assert files_expire_due() == 0  # safe twice: nothing is deleted again

    assert owner.get(f"/v1/files/{due['id']}").status_code == 404
    trash = {f["id"] for f in owner.get("/v1/files", {"status": "deleted"}).json()["data"]}
    assert trash == {due["id"], pending["id"]}
    for kept in (not_yet, never):
        assert owner.get(f"/v1/files/{kept['id']}").status_code == 200
    expired = {e.data["fileId"]: e.data for e in events(owner, "file.expired")}
    assert set(expired) == {due["id"], pending["id"]}
    assert expired[due["id"]]["expiresAt"] == expired_at
    assert {"deletedAt", "purgeAfter", "projectId"} <= set(expired[due["id"]])
    assert events(owner, "file.deleted") == []


def test_restoring_an_expired_file_clears_its_expiry(owner: Actor) -> None:
    file = uploaded_file(owner, expiresAt=later(days=1))
    expire_now(file["id"])
    files_expire_due()

    restored = owner.post(f"/v1/files/{file['id']}/restore")

    assert restored.status_code == 200, restored.json()
    assert restored.json()["status"] == "uploaded" and restored.json()["expiresAt"] is None
    assert files_expire_due() == 0
    assert owner.get(f"/v1/files/{file['id']}").status_code == 200


def test_a_run_is_bounded_and_the_next_runs_go_on(owner: Actor) -> None:
    ids = [start_upload(owner, expiresAt=later(days=1))["file"]["id"] for _ in range(7)]
    expire_now(*ids)

    with override_settings(SERVICE_EXPIRY_BATCH_SIZE=2, SERVICE_EXPIRY_MAX_PER_RUN=3):
        runs = [files_expire_due() for _ in range(4)]

    assert runs == [3, 3, 1, 0]
    assert File.objects.filter(id__in=ids, status="deleted").count() == 7
    assert len(events(owner, "file.expired")) == 7


@pytest.mark.django_db(transaction=True)
def test_sweeps_at_once_delete_each_file_once(transactional_db: None) -> None:
    actor = make_actor("expiry-racer")
    ids = [start_upload(actor, expiresAt=later(days=1))["file"]["id"] for _ in range(30)]
    expire_now(*ids)

    with override_settings(SERVICE_EXPIRY_BATCH_SIZE=4):
        counts = at_once(*[files_expire_due for _ in range(4)])

    assert sum(counts) == 30
    fired = [e.data["fileId"] for e in events(actor, "file.expired")]
    assert sorted(fired) == sorted(ids)
