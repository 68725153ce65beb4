"""Transitions that several paths make, each path checked against the same expectations:
restore (``…/restore``, the batch's ``restore``, a folder restore), delete (``DELETE``, the
batch's ``delete``, a folder delete, the expiry sweep) and move (``PATCH`` of the path, the
batch's ``update``, a folder move). A path differs from the others only where the guide says
so: a folder job adds ``jobId`` to each event, and the sweep's event is ``file.expired``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from events.models import Event
from files.models import File, StoredObject
from files.services import files_expire_due, files_expire_pending
from storage_service.timefmt import iso_required
from tests.factories import Actor
from tests.helpers import error_code, put_to, uploaded_file
from tests.jobs.seeding import job_of, run_job

pytestmark = pytest.mark.django_db

FILE_FIELDS = {
    "fileId",
    "filename",
    "path",
    "contentType",
    "size",
    "version",
    "status",
    "uploadTokenId",
}
BASE_FIELDS = {"projectId", "organizationId"}


def later(**delta: float) -> str:
    return iso_required(timezone.now() + timedelta(**delta))


def expire_now(*file_ids: str) -> None:
    File.objects.filter(id__in=file_ids).update(expires_at=timezone.now() - timedelta(seconds=1))


def events(actor: Actor, type: str, file_id: str) -> list[dict[str, Any]]:
    rows = Event.objects.filter(project=actor.project, type=type, data__fileId=file_id)
    return [event.data for event in rows.order_by("created_at")]


def run_folder_job(actor: Actor, url: str, body: dict[str, Any]) -> str:
    job = job_of(actor.post(url, body))
    assert run_job(job.id) == "done"
    done = actor.get(f"/v1/jobs/{job.id}").json()["data"]
    assert done["status"] == "succeeded", done
    return job.id


def one_batch_op(actor: Actor, operation: dict[str, Any]) -> dict[str, Any]:
    response = actor.post("/v1/files/batch", {"operations": [operation]})
    assert response.status_code == 200, response.json()
    [result] = response.json()["data"]
    return dict(result)


# --- Restore -------------------------------------------------------------------------------


def restore_by(actor: Actor, path: str, file: dict[str, Any]) -> str | None:
    """Restore ``file`` through ``path``; the job's id for a folder restore."""
    if path == "single":
        response = actor.post(f"/v1/files/{file['id']}/restore")
        assert response.status_code == 200, response.json()
        return None
    if path == "batch":
        result = one_batch_op(actor, {"op": "restore", "id": file["id"]})
        assert result["status"] == 200, result
        return None
    return run_folder_job(actor, "/v1/folders/restore", {"path": file["path"]})


RESTORE_PATHS = ["single", "batch", "folder"]


@pytest.mark.parametrize("path", RESTORE_PATHS)
def test_an_expired_file_restored_stays_restored_past_the_next_sweep(
    owner: Actor, path: str
) -> None:
    file = uploaded_file(owner, path="exp", expiresAt=later(days=1))
    expire_now(file["id"])
    assert files_expire_due() == 1
    assert owner.get(f"/v1/files/{file['id']}").status_code == 404

    job_id = restore_by(owner, path, file)

    shown = owner.get(f"/v1/files/{file['id']}").json()["data"]
    assert (shown["status"], shown["expiresAt"]) == ("uploaded", None)
    assert files_expire_due() == 0
    assert owner.get(f"/v1/files/{file['id']}").status_code == 200
    assert len(events(owner, "file.expired", file["id"])) == 1
    [restored] = events(owner, "file.restored", file["id"])
    expected = BASE_FIELDS | FILE_FIELDS | ({"jobId"} if job_id else set())
    assert set(restored) == expected
    assert restored.get("jobId") == job_id
    assert (restored["status"], restored["path"]) == ("uploaded", "exp")


@pytest.mark.parametrize("path", RESTORE_PATHS)
def test_a_deleted_pending_file_comes_back_pending_whichever_path_restores_it(
    owner: Actor, path: str
) -> None:
    started = owner.post(
        "/v1/files/upload",
        {"filename": "p.txt", "contentType": "text/plain", "size": 3, "path": "pend"},
    )
    assert started.status_code == 201, started.json()
    file = started.json()["file"]
    assert owner.delete(f"/v1/files/{file['id']}").status_code == 200

    if path == "single":
        # The single endpoint asks the store for the bytes of an uploaded file only.
        response = owner.post(f"/v1/files/{file['id']}/restore")
        assert response.status_code == 200, response.json()
        assert response.json()["status"] == "pending"
    else:
        restore_by(owner, path, file)

    assert owner.get(f"/v1/files/{file['id']}").json()["data"]["status"] == "pending"
    [restored] = events(owner, "file.restored", file["id"])
    assert restored["status"] == "pending"


@pytest.mark.parametrize("path", RESTORE_PATHS)
def test_no_path_restores_a_file_whose_bytes_were_purged(owner: Actor, path: str) -> None:
    file = uploaded_file(owner, path="gone")
    keep = uploaded_file(owner, path="gone")  # the folder restore needs one restorable file
    for each in (file, keep):
        assert owner.delete(f"/v1/files/{each['id']}").status_code == 200
    stored = File.objects.get(id=file["id"]).current_object
    StoredObject.objects.filter(id=stored.id).update(state=StoredObject.State.PURGED)

    if path == "single":
        response = owner.post(f"/v1/files/{file['id']}/restore")
        assert response.status_code == 409 and error_code(response) == "OBJECT_NOT_FOUND"
    elif path == "batch":
        result = one_batch_op(owner, {"op": "restore", "id": file["id"]})
        assert (result["status"], result["body"]["error"]["code"]) == (409, "OBJECT_NOT_FOUND")
    else:
        run_folder_job(owner, "/v1/folders/restore", {"path": "gone"})

    assert owner.get(f"/v1/files/{file['id']}").status_code == 404
    assert events(owner, "file.restored", file["id"]) == []


# --- Delete --------------------------------------------------------------------------------


def delete_by(actor: Actor, path: str, file: dict[str, Any]) -> str | None:
    """Delete ``file`` through ``path``; the job's id for a folder delete."""
    if path == "single":
        response = actor.delete(f"/v1/files/{file['id']}")
        assert response.status_code == 200, response.json()
        assert response.json()["data"] == {"id": file["id"], "deleted": True}
        return None
    if path == "batch":
        result = one_batch_op(actor, {"op": "delete", "id": file["id"]})
        assert result["status"] == 200, result
        return None
    if path == "folder":
        return run_folder_job(actor, "/v1/folders/delete", {"path": file["path"]})
    expire_now(file["id"])
    assert files_expire_due() == 1
    return None


DELETE_PATHS = ["single", "batch", "folder", "expiry"]


@pytest.mark.parametrize("path", DELETE_PATHS)
def test_every_delete_path_soft_deletes_alike_and_drops_a_pending_replacement(
    owner: Actor, path: str
) -> None:
    file = uploaded_file(owner, path="del", expiresAt=later(days=1))
    replace = owner.post(f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": 3})
    assert replace.status_code == 200, replace.json()
    replacement = File.objects.get(id=file["id"]).replacement_object
    assert replacement is not None

    job_id = delete_by(owner, path, file)

    assert owner.get(f"/v1/files/{file['id']}").status_code == 404
    trash = owner.get("/v1/files", {"status": "deleted"}).json()["data"]
    [deleted] = [f for f in trash if f["id"] == file["id"]]
    assert deleted["status"] == "deleted" and deleted["deletedAt"] is not None
    replacement.refresh_from_db()
    assert replacement.state == StoredObject.State.DISCARDED
    assert File.objects.get(id=file["id"]).replacement_object_id is None

    event_type = "file.expired" if path == "expiry" else "file.deleted"
    other_type = "file.deleted" if path == "expiry" else "file.expired"
    [event] = events(owner, event_type, file["id"])
    assert events(owner, other_type, file["id"]) == []
    expected = BASE_FIELDS | FILE_FIELDS | {"deletedAt", "purgeAfter"}
    expected |= {"jobId"} if job_id else set()
    expected |= {"expiresAt"} if path == "expiry" else set()
    assert set(event) == expected
    assert event.get("jobId") == job_id
    assert (event["status"], event["deletedAt"]) == ("deleted", deleted["deletedAt"])
    if path == "expiry":
        expires_at = File.objects.get(id=file["id"]).expires_at
        assert expires_at is not None and event["expiresAt"] == iso_required(expires_at)

    # Each is undone by the same restore, which brings the status back and no replacement.
    restored = owner.post(f"/v1/files/{file['id']}/restore")
    assert restored.status_code == 200, restored.json()
    assert restored.json()["status"] == "uploaded"
    again = owner.post(f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": 3})
    assert again.status_code == 200, again.json()


@pytest.mark.parametrize("path", DELETE_PATHS)
def test_every_delete_path_keeps_a_pending_file_pending_for_its_restore(
    owner: Actor, path: str
) -> None:
    started = owner.post(
        "/v1/files/upload",
        {"filename": "p.txt", "contentType": "text/plain", "size": 3, "path": "pdel",
         "expiresAt": later(days=1)},
    )  # fmt: skip
    assert started.status_code == 201, started.json()
    file = started.json()["file"]

    delete_by(owner, path, file)

    restored = owner.post(f"/v1/files/{file['id']}/restore")
    assert restored.status_code == 200, restored.json()
    assert restored.json()["status"] == "pending"


def test_a_second_delete_is_404_and_records_nothing(owner: Actor) -> None:
    file = uploaded_file(owner)
    assert owner.delete(f"/v1/files/{file['id']}").status_code == 200
    again = owner.delete(f"/v1/files/{file['id']}")
    assert again.status_code == 404 and error_code(again) == "FILE_NOT_FOUND"
    assert len(events(owner, "file.deleted", file["id"])) == 1


# --- Move ----------------------------------------------------------------------------------


def move_by(actor: Actor, path: str, file: dict[str, Any], target: str) -> str | None:
    if path == "single":
        response = actor.patch(f"/v1/files/{file['id']}", {"path": target})
        assert response.status_code == 200, response.json()
        return None
    if path == "batch":
        result = one_batch_op(actor, {"op": "update", "id": file["id"], "path": target})
        assert result["status"] == 200, result
        return None
    return run_folder_job(actor, "/v1/folders/move", {"from": file["path"], "to": target})


@pytest.mark.parametrize("path", ["single", "batch", "folder"])
def test_every_move_path_moves_alike(owner: Actor, path: str) -> None:
    file = uploaded_file(owner, path="from/here", metadata={"k": "v"}, expiresAt=later(days=1))
    before = owner.get(f"/v1/files/{file['id']}").json()["data"]

    job_id = move_by(owner, path, file, "to/there")

    after = owner.get(f"/v1/files/{file['id']}").json()["data"]
    assert after["path"] == "to/there"
    unchanged = {k: v for k, v in before.items() if k not in {"path", "updatedAt"}}
    assert {k: after[k] for k in unchanged} == unchanged
    assert after["updatedAt"] > before["updatedAt"]
    [moved] = events(owner, "file.moved", file["id"])
    expected = BASE_FIELDS | FILE_FIELDS | {"previousPath"} | ({"jobId"} if job_id else set())
    assert set(moved) == expected
    assert (moved["path"], moved["previousPath"]) == ("to/there", "from/here")
    assert moved.get("jobId") == job_id


# --- Dropping a pending replacement ----------------------------------------------------------


@pytest.mark.parametrize("path", ["refused", "expired", "restarted", "deleted"])
def test_every_path_that_drops_a_pending_replacement_drops_it_alike(
    owner: Actor, path: str
) -> None:
    file = uploaded_file(owner)
    started = owner.post(f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": 3})
    assert started.status_code == 200, started.json()
    replacement = File.objects.get(id=file["id"]).replacement_object
    assert replacement is not None

    if path == "refused":  # the stored bytes are not the declared size: the complete refuses
        assert put_to(started.json()["upload"], b"abc").status_code == 200
        StoredObject.objects.filter(id=replacement.id).update(declared_size=99)
        refused = owner.post(f"/v1/files/{file['id']}/replace/complete")
        assert refused.status_code == 409, refused.json()
        assert error_code(refused) == "UPLOAD_SIZE_MISMATCH"
    else:
        StoredObject.objects.filter(id=replacement.id).update(
            upload_expires_at=timezone.now() - timedelta(days=2)
        )
        if path == "expired":
            files_expire_pending()
        elif path == "restarted":
            again = owner.post(
                f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": 3}
            )
            assert again.status_code == 200, again.json()
        else:
            assert owner.delete(f"/v1/files/{file['id']}").status_code == 200

    replacement.refresh_from_db()
    assert replacement.state == StoredObject.State.DISCARDED
    current = File.objects.get(id=file["id"])
    assert current.replacement_object_id != replacement.id
    assert current.version == 1 and current.current_object_id != replacement.id
