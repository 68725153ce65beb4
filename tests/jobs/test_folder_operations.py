"""Folder move, delete and restore: the job each starts, what it changes, its events, its
refusals, and what happens to files that change while it runs.

The job runs here in the test's process (``run_job``: the task's code without the broker);
tests/ops/test_worker_faults.py and tests/e2e/test_folder_jobs.py run it on real workers.
"""

from __future__ import annotations

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from events.models import Event
from files.models import File
from jobs.models import Job
from jobs.services import job_step
from tests.factories import Actor, key_for
from tests.helpers import error_code
from tests.jobs.seeding import job_of, run_job, seed_files

pytestmark = pytest.mark.django_db


def paths_of(files: list[File]) -> list[str | None]:
    return [File.objects.get(id=file.id).path for file in files]


def events(type: str) -> list[Event]:
    return list(Event.objects.filter(type=type).order_by("id"))


# --- Move ----------------------------------------------------------------------------------


def test_a_move_gives_every_file_of_the_folder_the_same_place_under_the_destination(
    owner: Actor,
) -> None:
    inside = seed_files(owner, ["a/b", "a/b", "a/b/c", "a/b/c/d"])
    outside = seed_files(owner, ["a/bc", "a", None, "b/a/b"])

    response = owner.post("/v1/folders/move", {"from": "a/b", "to": "x/y"})
    job = job_of(response)
    body = response.json()["data"]
    assert body["type"] == "folder.move" and body["status"] == "pending"
    assert body["params"] == {"from": "a/b", "to": "x/y"}
    assert (body["filesTotal"], body["filesDone"], body["error"], body["finishedAt"]) == (
        None,
        0,
        None,
        None,
    )
    assert response["Content-Type"] == "application/json"

    assert run_job(job.id) == "done"

    assert paths_of(inside) == ["x/y", "x/y", "x/y/c", "x/y/c/d"]
    assert paths_of(outside) == ["a/bc", "a", None, "b/a/b"]
    done = owner.get(f"/v1/jobs/{job.id}").json()["data"]
    assert (done["status"], done["filesTotal"], done["filesDone"]) == ("succeeded", 4, 4)
    assert done["finishedAt"] is not None and done["error"] is None

    moved = events("file.moved")
    assert sorted(e.data["fileId"] for e in moved) == sorted(f.id for f in inside)
    for event in moved:
        assert event.data["jobId"] == job.id
        file = File.objects.get(id=event.data["fileId"])
        assert event.data["path"] == file.path
        assert event.data["previousPath"] == "a/b" + file.path.removeprefix("x/y")
        assert event.data["projectId"] == owner.project.id
        assert event.data["filename"] == file.filename and event.data["status"] == "uploaded"
    [folder] = events("folder.moved")
    assert folder.data == {
        "projectId": owner.project.id,
        "organizationId": owner.project.organization_id,
        "jobId": job.id,
        "from": "a/b",
        "to": "x/y",
        "files": 4,
        "status": "succeeded",
    }


@pytest.mark.parametrize("root", ["", "/", None])
def test_a_move_to_the_root_takes_the_folder_name_off_every_path(
    owner: Actor, root: str | None
) -> None:
    files = seed_files(owner, ["docs", "docs/2026", "docs/2026/q1"])
    run_job(job_of(owner.post("/v1/folders/move", {"from": "docs", "to": root})).id)
    assert paths_of(files) == [None, "2026", "2026/q1"]


def test_renaming_a_folder_is_a_move(owner: Actor) -> None:
    files = seed_files(owner, ["a/old", "a/old/x", "a/older"])
    run_job(job_of(owner.post("/v1/folders/move", {"from": "a/old", "to": "a/new"})).id)
    assert paths_of(files) == ["a/new", "a/new/x", "a/older"]


def test_a_folder_can_move_up_into_its_own_parent(owner: Actor) -> None:
    files = seed_files(owner, ["a/b", "a/b/c"])
    run_job(job_of(owner.post("/v1/folders/move", {"from": "a/b", "to": "a"})).id)
    assert paths_of(files) == ["a", "a/c"]


def test_names_with_like_wildcards_match_only_themselves(owner: Actor) -> None:
    files = seed_files(owner, ["50%_off", "50%_off/x", "50xx_off", "50%_offer", "5_%"])
    run_job(job_of(owner.post("/v1/folders/move", {"from": "50%_off", "to": "sale"})).id)
    assert paths_of(files) == ["sale", "sale/x", "50xx_off", "50%_offer", "5_%"]


def test_deleted_files_stay_where_they_were(owner: Actor) -> None:
    [kept] = seed_files(owner, ["a"])
    [deleted] = seed_files(owner, ["a/x"], status=File.Status.DELETED)
    run_job(job_of(owner.post("/v1/folders/move", {"from": "a", "to": "b"})).id)
    assert paths_of([kept, deleted]) == ["b", "a/x"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"from": "", "to": "b"}, "from"),
        ({"from": "/", "to": "b"}, "from"),
        ({"from": None, "to": "b"}, "from"),
        ({"from": "a", "to": "a"}, "to"),
        ({"from": "a", "to": "a/b"}, "to"),
        ({"from": "a/b", "to": "a/b/c/d"}, "to"),
        ({"from": "a"}, "to"),
        ({"to": "a"}, "from"),
        ({"from": "a", "to": "b", "extra": 1}, "extra"),
        ({"from": "a/../b", "to": "c"}, "from"),
        ({"from": "a", "to": "/b/"}, "to"),
        ({"from": ["a"], "to": "b"}, "from"),
        ({"from": {"$gt": ""}, "to": "b"}, "from"),
        ({"from": "a\u202eb", "to": "b"}, "from"),
        ({"from": "a" * 1025, "to": "b"}, "from"),
    ],
)
def test_a_move_that_breaks_the_rules_is_refused_before_any_job(
    owner: Actor, body: dict[str, object], field: str
) -> None:
    seed_files(owner, ["a", "a/b", "a/b/c"])
    response = owner.post("/v1/folders/move", body)
    assert response.status_code == 400, response.json()
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]
    assert not Job.objects.exists()


def test_a_body_that_is_not_an_object_is_refused(owner: Actor) -> None:
    for body in (["a", "b"], "a", 3):
        response = owner.post("/v1/folders/move", body)
        assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"
    assert not Job.objects.exists()


@override_settings(SERVICE_MAX_PATH_LENGTH=20)
def test_a_move_whose_resulting_paths_are_too_long_is_refused(owner: Actor) -> None:
    seed_files(owner, ["a/b", "a/b/1234567890"])  # under "abcdefghij": 21 characters
    response = owner.post("/v1/folders/move", {"from": "a/b", "to": "abcdefghij"})
    assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"
    assert "21 characters" in response.json()["error"]["details"]["to"][0]
    assert not Job.objects.exists()
    # Up to the limit exactly is fine: "abcdefg/1234567890" has 18.
    assert owner.post("/v1/folders/move", {"from": "a/b", "to": "abcdefg"}).status_code == 202


def test_an_empty_or_unknown_folder_is_404_folder_not_found(owner: Actor) -> None:
    seed_files(owner, ["a/b"])
    seed_files(owner, ["gone"], status=File.Status.DELETED)
    for source in ("nothing", "a/b/c", "a/bb", "gone", "A/B"):
        response = owner.post("/v1/folders/move", {"from": source, "to": "z"})
        assert response.status_code == 404, source
        assert response.json()["error"]["code"] == "FOLDER_NOT_FOUND"
    assert not Job.objects.exists()


# --- Tenancy -------------------------------------------------------------------------------


def test_another_tenants_folder_and_job_are_404_as_if_missing(
    owner: Actor, sibling: Actor, outsider: Actor
) -> None:
    files = seed_files(owner, ["private", "private/x"])
    for stranger in (sibling, outsider):
        for url, body in (
            ("/v1/folders/move", {"from": "private", "to": "stolen"}),
            ("/v1/folders/delete", {"path": "private"}),
        ):
            response = stranger.post(url, body)
            assert response.status_code == 404 and error_code(response) == "FOLDER_NOT_FOUND"
    job = job_of(owner.post("/v1/folders/move", {"from": "private", "to": "mine"}))
    for stranger in (sibling, outsider):
        response = stranger.get(f"/v1/jobs/{job.id}")
        assert response.status_code == 404 and error_code(response) == "JOB_NOT_FOUND"
        assert stranger.get("/v1/jobs").json()["data"] == []
    run_job(job.id)
    assert paths_of(files) == ["mine", "mine/x"]
    assert owner.get("/v1/jobs/job_nonsense").status_code == 404
    assert owner.get("/v1/jobs/../files").status_code == 404


def test_a_live_key_sees_no_test_job_and_moves_no_test_file(owner: Actor) -> None:
    files = seed_files(owner, ["shared"])
    job = job_of(owner.post("/v1/folders/move", {"from": "shared", "to": "moved"}))
    key = key_for(owner.project, "live")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key.raw_key}")
    live = Actor(project=owner.project, key=key, client=client)
    assert live.get(f"/v1/jobs/{job.id}").status_code == 404
    response = live.post("/v1/folders/delete", {"path": "shared"})
    assert response.status_code == 404 and error_code(response) == "FOLDER_NOT_FOUND"
    run_job(job.id)
    assert paths_of(files) == ["moved"]


# --- Delete and restore --------------------------------------------------------------------


def test_a_folder_delete_soft_deletes_as_delete_would_and_a_restore_brings_it_back(
    owner: Actor,
) -> None:
    files = seed_files(owner, ["trash", "trash/x", "trash/x/y"])
    [pending] = seed_files(owner, ["trash"], status=File.Status.PENDING)
    [other] = seed_files(owner, ["trashcan"])

    job = job_of(owner.post("/v1/folders/delete", {"path": "trash"}))
    assert job.type == "folder.delete"
    run_job(job.id)
    for file in [*files, pending]:
        file.refresh_from_db()
        assert file.status == "deleted" and file.deleted_at is not None
    assert pending.status_before_delete == "pending"
    other.refresh_from_db()
    assert other.status == "uploaded"
    assert owner.get(f"/v1/files/{files[0].id}").status_code == 404
    deleted = events("file.deleted")
    assert len(deleted) == 4 and {e.data["jobId"] for e in deleted} == {job.id}
    assert all(e.data["deletedAt"] and e.data["purgeAfter"] for e in deleted)
    [folder] = events("folder.deleted")
    assert (folder.data["path"], folder.data["files"]) == ("trash", 4)

    # Nothing left to delete, and nothing deleted to restore elsewhere.
    again = owner.post("/v1/folders/delete", {"path": "trash"})
    assert again.status_code == 404 and error_code(again) == "FOLDER_NOT_FOUND"
    nothing = owner.post("/v1/folders/restore", {"path": "trashcan"})
    assert nothing.status_code == 404 and error_code(nothing) == "FOLDER_NOT_FOUND"

    restore = job_of(owner.post("/v1/folders/restore", {"path": "trash/x"}))
    run_job(restore.id)
    statuses = {f.id: File.objects.get(id=f.id).status for f in [*files, pending]}
    assert statuses == {
        files[0].id: "deleted",
        files[1].id: "uploaded",
        files[2].id: "uploaded",
        pending.id: "deleted",
    }
    restored = events("file.restored")
    assert sorted(e.data["fileId"] for e in restored) == sorted([files[1].id, files[2].id])
    assert {e.data["jobId"] for e in restored} == {restore.id}
    assert owner.get(f"/v1/jobs/{restore.id}").json()["data"]["filesDone"] == 2


def test_a_folder_restore_skips_files_whose_bytes_were_purged(owner: Actor) -> None:
    files = seed_files(owner, ["old", "old"], status=File.Status.DELETED)
    File.objects.filter(id=files[0].id).update(status_before_delete="uploaded")
    purged = files[1]
    purged.current_object.state = "purged"
    purged.current_object.save()
    run_job(job_of(owner.post("/v1/folders/restore", {"path": "old"})).id)
    assert [File.objects.get(id=f.id).status for f in files] == ["uploaded", "deleted"]


@pytest.mark.parametrize("url", ["/v1/folders/delete", "/v1/folders/restore"])
@pytest.mark.parametrize("path", ["", "/", None, "a/..", 7, ["a"], "x" * 5000])
def test_a_folder_delete_or_restore_of_the_root_or_a_bad_path_is_refused(
    owner: Actor, url: str, path: object
) -> None:
    seed_files(owner, ["a"])
    response = owner.post(url, {"path": path})
    assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"
    assert not Job.objects.exists()


# --- Files that change while the job runs --------------------------------------------------


@override_settings(SERVICE_JOB_BATCH_SIZE=2)
def test_files_that_reach_the_folder_while_the_job_runs_are_moved_before_it_succeeds(
    owner: Actor,
) -> None:
    # Lowest ids first: these sit behind the job's cursor once its first batches are done.
    [moved_in_later, left_later] = seed_files(owner, ["elsewhere", "src/leaving"])
    batch = seed_files(owner, ["src"] * 6)
    job = job_of(owner.post("/v1/folders/move", {"from": "src", "to": "dst"}))
    token = "a" * 32
    assert job_step(job_id=job.id, token=token) == "more"
    assert job_step(job_id=job.id, token=token) == "more"
    job.refresh_from_db()
    assert job.status == "running" and job.files_total == 7 and job.files_done == 4
    assert job.cursor is not None and job.cursor > moved_in_later.id

    # Meanwhile: a file moved into the folder (behind the cursor), a file created in it, a
    # file moved out before the job reached it, and one renamed (ahead of the cursor).
    assert owner.patch(f"/v1/files/{moved_in_later.id}", {"path": "src/late"}).status_code == 200
    [created] = seed_files(owner, ["src/new"])
    renamed = batch[-1]
    assert owner.patch(f"/v1/files/{renamed.id}", {"filename": "renamed.txt"}).status_code == 200
    seen_at_the_end = owner.get(f"/v1/jobs/{job.id}").json()["data"]
    assert seen_at_the_end["status"] == "running"

    assert run_job(job.id, token=token) == "done"
    job.refresh_from_db()
    assert job.status == "succeeded"
    assert paths_of([moved_in_later, created, renamed]) == ["dst/late", "dst/new", "dst"]
    assert File.objects.get(id=renamed.id).filename == "renamed.txt"
    # left_later was in the folder when the job started; the job moved it (it was ahead).
    assert paths_of([left_later]) == ["dst/leaving"]
    assert not File.objects.filter(path__startswith="src").exists()
    assert job.files_done == job.files_total == 9
    assert len(events("file.moved")) == 9 + 1  # and the PATCH's own file.moved


@override_settings(SERVICE_JOB_BATCH_SIZE=2)
def test_a_file_moved_out_of_the_folder_before_the_job_reaches_it_stays_where_it_was_put(
    owner: Actor,
) -> None:
    files = seed_files(owner, ["src"] * 5)
    job = job_of(owner.post("/v1/folders/move", {"from": "src", "to": "dst"}))
    assert job_step(job_id=job.id, token="t" * 32) == "more"
    assert owner.patch(f"/v1/files/{files[-1].id}", {"path": "kept"}).status_code == 200
    run_job(job.id, token="t" * 32)
    assert paths_of(files) == ["dst", "dst", "dst", "dst", "kept"]
    assert Job.objects.get(id=job.id).files_done == 4


@override_settings(SERVICE_JOB_BATCH_SIZE=2, SERVICE_MAX_PATH_LENGTH=12)
def test_a_file_that_arrives_with_a_path_too_long_to_move_fails_the_job(owner: Actor) -> None:
    files = seed_files(owner, ["ab", "ab", "ab"])
    job = job_of(owner.post("/v1/folders/move", {"from": "ab", "to": "abcdefghij"}))
    assert job_step(job_id=job.id, token="t" * 32) == "more"
    [late] = seed_files(owner, ["ab/cd"])  # "abcdefghij/cd": 13 characters
    run_job(job.id, token="t" * 32)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error is not None and job.error["code"] == "VALIDATION_ERROR"
    assert job.error["details"] == {"filesLeft": 1}
    assert paths_of([*files, late]) == ["abcdefghij"] * 3 + ["ab/cd"]
    [folder] = events("folder.moved")
    assert folder.data["status"] == "failed" and folder.data["files"] == 3


def test_a_second_run_does_nothing_while_the_first_holds_the_job(owner: Actor) -> None:
    seed_files(owner, ["src"] * 3)
    job = job_of(owner.post("/v1/folders/move", {"from": "src", "to": "dst"}))
    with override_settings(SERVICE_JOB_BATCH_SIZE=1):
        assert job_step(job_id=job.id, token="first" * 4) == "more"
        assert job_step(job_id=job.id, token="second" * 4) == "skipped"
        assert run_job(job.id, token="first" * 4) == "done"
    assert run_job(job.id) == "skipped"  # ended: a late duplicate changes nothing
    assert Job.objects.get(id=job.id).files_done == 3
    assert len(events("file.moved")) == 3 and len(events("folder.moved")) == 1


# --- The cap and the list ------------------------------------------------------------------


@override_settings(SERVICE_JOB_MAX_ACTIVE_PER_PROJECT=2)
def test_a_tenant_with_its_cap_of_jobs_running_is_told_to_retry_later(
    owner: Actor, sibling: Actor
) -> None:
    seed_files(owner, ["a", "b", "c"])
    seed_files(sibling, ["a"])
    first = job_of(owner.post("/v1/folders/move", {"from": "a", "to": "x"}))
    job_of(owner.post("/v1/folders/delete", {"path": "b"}))
    refused = owner.post("/v1/folders/move", {"from": "c", "to": "y"})
    assert refused.status_code == 429 and error_code(refused) == "RATE_LIMITED"
    assert int(refused["Retry-After"]) > 0
    assert refused.json()["error"]["details"] == {"maxActiveJobs": 2}
    # Another tenant is not held up by this one's jobs.
    assert sibling.post("/v1/folders/move", {"from": "a", "to": "x"}).status_code == 202
    run_job(first.id)
    assert owner.post("/v1/folders/move", {"from": "c", "to": "y"}).status_code == 202


def test_jobs_are_listed_newest_first_in_keyset_pages(owner: Actor, sibling: Actor) -> None:
    seed_files(owner, [f"f{i}" for i in range(5)])
    seed_files(sibling, ["f0"])
    sibling_job = job_of(sibling.post("/v1/folders/delete", {"path": "f0"}))
    made = []
    with override_settings(SERVICE_JOB_MAX_ACTIVE_PER_PROJECT=10):
        for i in range(5):
            made.append(job_of(owner.post("/v1/folders/delete", {"path": f"f{i}"})).id)
    first = owner.get("/v1/jobs", {"limit": 2}).json()
    assert [j["id"] for j in first["data"]] == made[::-1][:2]
    assert first["pagination"]["hasMore"] is True
    second = owner.get("/v1/jobs", {"limit": 2, "cursor": first["pagination"]["nextCursor"]})
    third = owner.get(
        "/v1/jobs", {"limit": 2, "cursor": second.json()["pagination"]["nextCursor"]}
    ).json()
    listed = [j["id"] for page in (first, second.json(), third) for j in page["data"]]
    assert listed == made[::-1] and sibling_job.id not in listed
    assert third["pagination"] == {"hasMore": False, "nextCursor": None}
    for bad in ({"limit": 0}, {"limit": 101}, {"cursor": "forged"}, {"limit": "x"}):
        response = owner.get("/v1/jobs", bad)
        assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"


def test_folder_operations_answer_only_post(owner: Actor) -> None:
    seed_files(owner, ["a"])
    for url in ("/v1/folders/move", "/v1/folders/delete", "/v1/folders/restore"):
        for send in (owner.client.delete, owner.client.get, owner.client.put):
            response = send(url)
            assert response.status_code == 405, (url, send)
            assert error_code(response) == "METHOD_NOT_ALLOWED"
        allow = owner.client.options(url)["Allow"]
        assert allow == "POST, OPTIONS", allow
    assert File.objects.get(path="a").status == "uploaded"


def test_jobs_are_filtered_by_status_and_type(owner: Actor) -> None:
    seed_files(owner, ["a", "b"])
    moved = job_of(owner.post("/v1/folders/move", {"from": "a", "to": "x"}))
    deleted = job_of(owner.post("/v1/folders/delete", {"path": "b"}))
    run_job(moved.id)

    def listed(**query: str) -> list[str]:
        response = owner.get("/v1/jobs", query)
        assert response.status_code == 200, response.json()
        return [job["id"] for job in response.json()["data"]]

    assert listed(status="succeeded") == [moved.id]
    assert listed(status="pending") == [deleted.id]
    assert listed(type="folder.delete") == [deleted.id]
    assert listed(type="folder.move", status="pending") == []
    for bad in ({"status": "done"}, {"type": "folder.copy"}, {"status": ""}):
        response = owner.get("/v1/jobs", bad)
        assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"
    twice = owner.client.get("/v1/jobs?status=pending&status=running")
    assert twice.status_code == 400
