"""Folder operations, jobs and batches from the Python client and the `storage` command, on
the real stack: the API server, the Celery worker that runs the jobs, the database."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from storage_client import Client, JobFailedError, NotFoundError, ValidationError

from files.models import File
from tests.client.test_cli import Cli, cli  # noqa: F401 (fixture)
from tests.factories import Actor
from tests.jobs.seeding import seed_files, seed_folder_sql

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker"),
]


def test_a_folder_move_waited_for_reports_progress_and_ends_succeeded(
    client: Client, actor: Actor
) -> None:
    seed_folder_sql(actor, "inbox/2026", 1500)
    seen: list[tuple[int, int]] = []
    job = client.folders.move(
        "inbox", "archive/inbox", wait=True, progress=lambda d, t: seen.append((d, t))
    )
    assert (job.status, job.files_done, job.files_total) == ("succeeded", 1500, 1500)
    assert job.finished_at is not None and job.params == {"from": "inbox", "to": "archive/inbox"}
    assert seen[-1] == (1500, 1500)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert File.objects.filter(project=actor.project, path="archive/inbox/2026").count() == 1500
    assert client.jobs.get(job.id).status == "succeeded"
    assert [j.id for j in client.jobs.list()] == [job.id]

    started = client.folders.delete("archive", wait=False)
    assert started.status in ("pending", "running", "succeeded")
    deleted = client.jobs.wait(started.id, timeout=60)
    assert deleted.files_done == 1500
    restored = client.folders.restore("archive/inbox", wait=True, timeout=60)
    assert restored.files_done == 1500
    assert [j.id for j in client.jobs.list(page_size=1)] == [restored.id, deleted.id, job.id]


def test_refusals_are_the_clients_errors(client: Client, actor: Actor) -> None:
    seed_files(actor, ["a/b"])
    with pytest.raises(NotFoundError) as missing:
        client.folders.move("nowhere", "x")
    assert missing.value.code == "FOLDER_NOT_FOUND"
    with pytest.raises(ValidationError):
        client.folders.move("a", "a/b/c")
    with pytest.raises(NotFoundError) as no_job:
        client.jobs.get("job_01m80p9qhfbw0rf406y6kr13qe")
    assert no_job.value.code == "JOB_NOT_FOUND"
    assert issubclass(JobFailedError, Exception)


def test_a_batch_from_the_client(client: Client, actor: Actor) -> None:
    a, b = seed_files(actor, ["x", "x"])
    results = client.files.batch(
        [
            {"op": "update", "id": a.id, "filename": "renamed.txt"},
            {"op": "copy", "id": b.id, "path": "copies"},
            {"op": "delete", "id": "file_01m80p9qhfbw0rf406y6kr13qe"},
        ],
        idempotency_key="client-batch-1",
    )
    assert [(r.op, r.status, r.ok) for r in results] == [
        ("update", 200, True),
        ("copy", 201, True),
        ("delete", 404, False),
    ]
    assert results[0].body["filename"] == "renamed.txt"
    assert results[2].error is not None and results[2].error["code"] == "FILE_NOT_FOUND"
    with pytest.raises(ValidationError):
        client.files.batch([{"op": "explode", "id": a.id}])


def test_the_folder_commands_follow_the_job_to_its_end(
    cli: Cli,  # noqa: F811
    actor: Actor,
) -> None:
    seed_folder_sql(actor, "photos/2025", 50)
    moved: Any = cli.json("mv-folder", "photos", "albums/photos")
    assert (moved["status"], moved["filesDone"]) == ("succeeded", 50)
    shown = cli.run("job", moved["id"])
    assert shown.returncode == 0 and "succeeded  50/50 files" in shown.stdout

    deleted = cli.run("rm-folder", "albums")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.startswith("succeeded: 50 file(s)")
    started: subprocess.CompletedProcess[str] = cli.run("restore-folder", "albums", "--no-wait")
    assert started.returncode == 0 and started.stdout.startswith("started job_")
    missing = cli.run("mv-folder", "nothing-here", "/")
    assert missing.returncode == 1
    assert missing.stderr.startswith("storage: error: FOLDER_NOT_FOUND")
