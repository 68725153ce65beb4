"""A folder move on real workers: a worker SIGKILLed in the middle of a 20,000-file move, and
the job taken over by another from its last committed batch; the result is exact (every file
moved once, one event each) and the folder's event reaches a real receiver. A job whose batch
fails every time ends failed after its attempts.

Workers and their private Redis are tests/ops/test_worker_faults.py's fixtures.
"""

from __future__ import annotations

import signal
import time
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Count
from django.utils import timezone

from events.models import Event
from files.models import File
from jobs.models import Job
from storage_service.celery import app
from tests.factories import make_actor
from tests.helpers import register_webhook, wait_for
from tests.jobs.seeding import job_of, seed_files, seed_folder_sql
from tests.ops.test_worker_faults import (  # noqa: F401 (fixtures)
    Spawn,
    private_broker,
    redis_server,
    spawn_worker,
)
from tests.webhook_receiver import Receiver

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FILES = 20_000


@pytest.mark.timeout(300)
def test_a_move_whose_worker_is_killed_midway_is_finished_exactly_by_another(
    spawn_worker: Spawn,  # noqa: F811
    receiver: Receiver,
) -> None:
    owner = make_actor("fault-move")
    register_webhook(owner, receiver.url("/folders"), ["folder.moved"])
    seed_folder_sql(owner, "big/src", FILES)
    [bystander] = File.objects.filter(project=owner.project)[:1]
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    # Small batches, so the kill lands between many commits and inside one.
    doomed = spawn_worker(queue, SERVICE_JOB_BATCH_SIZE="400")
    spawn_worker(settings.SERVICE_WEBHOOK_QUEUE, pool="threads")

    job = job_of(owner.post("/v1/folders/move", {"from": "big", "to": "moved/big"}))
    wait_for(
        lambda: Job.objects.get(id=job.id).files_done >= 2_000,
        timeout=120,
        what="the first worker moves a few batches",
    )
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=10)

    stopped = Job.objects.get(id=job.id)
    assert stopped.status == "running" and 0 < stopped.files_done < FILES
    assert stopped.files_total == FILES
    # What committed is exactly what the job's row says: no batch half done.
    moved = File.objects.filter(project=owner.project, path="moved/big/src")
    assert moved.count() == stopped.files_done
    assert Event.objects.filter(type="file.moved", data__jobId=job.id).count() == stopped.files_done
    assert moved.filter(id__gt=stopped.cursor).count() == 0
    # The dead run's lease still holds the job: a new message alone does not take it...
    spawn_worker(queue)
    app.send_task("jobs.tasks.run_job", args=[job.id], queue=queue)
    # ...until the lease runs out (moved back here rather than waited for); then the sweep
    # sends it again and the healthy worker goes on from the cursor.
    Job.objects.filter(id=job.id).update(leased_until=timezone.now() - timedelta(seconds=1))
    app.send_task("jobs.tasks.sweep_jobs", queue=queue)
    done = wait_for(
        lambda: (j := Job.objects.get(id=job.id)).status == "succeeded" and j,
        timeout=180,
        what="the second worker finishes the move",
    )

    assert done.files_done == done.files_total == FILES
    assert moved.count() == FILES
    assert not File.objects.filter(project=owner.project, path__startswith="big").exists()
    assert File.objects.get(id=bystander.id).path == "moved/big/src"
    per_file = (
        Event.objects.filter(type="file.moved", data__jobId=job.id)
        .values("data__fileId")
        .annotate(n=Count("id"))
    )
    assert len(per_file) == FILES and {row["n"] for row in per_file} == {1}
    [arrived] = receiver.wait_for("/folders", 1, timeout=60)
    body = arrived.json()
    assert body["type"] == "folder.moved"
    assert body["data"]["jobId"] == job.id and body["data"]["files"] == FILES
    assert (body["data"]["from"], body["data"]["to"]) == ("big", "moved/big")


@pytest.mark.timeout(180)
def test_a_job_whose_batch_keeps_failing_ends_failed_after_its_attempts(
    spawn_worker: Spawn,  # noqa: F811
) -> None:
    owner = make_actor("fault-poison")
    files = seed_files(owner, ["poison/dir"] * 30)
    # A fault in the database, as a broken row or a bug would be: updating the 25th file
    # raises, so its batch (the third of ten) fails every time and nothing of it commits.
    poisoned = files[24].id
    assert poisoned.replace("_", "").isalnum()  # written into the DDL (no parameters there)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION test_poison() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'poisoned file'; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER test_poison BEFORE UPDATE ON files_file FOR EACH ROW"
            f" WHEN (OLD.id = '{poisoned}') EXECUTE FUNCTION test_poison()"
        )
    try:
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        spawn_worker(
            queue,
            SERVICE_JOB_BATCH_SIZE="10",
            SERVICE_JOB_MAX_ATTEMPTS="2",
            SERVICE_JOB_LEASE_SECONDS="5",
            SERVICE_JOB_SLICE_SECONDS="1",
        )
        job = job_of(owner.post("/v1/folders/move", {"from": "poison", "to": "moved"}))

        def ended() -> dict[str, Any] | None:
            # The sweep (beat's, every SERVICE_JOB_SWEEP_INTERVAL_SECONDS) sends a failed
            # job again once a lease's time has passed; here it is sent every second.
            time.sleep(1)
            app.send_task("jobs.tasks.sweep_jobs", queue=queue)
            data: dict[str, Any] = owner.get(f"/v1/jobs/{job.id}").json()["data"]
            return data if data["status"] not in ("pending", "running") else None

        data = wait_for(ended, timeout=120, what="the job gives up")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER test_poison ON files_file")
            cursor.execute("DROP FUNCTION test_poison()")

    assert data["status"] == "failed"
    assert data["error"]["code"] == "INTERNAL_ERROR"
    assert data["error"]["details"] == {"attempts": 2}
    assert data["finishedAt"] is not None
    # The two batches before the poisoned one stay done; nothing of it or after it is.
    assert data["filesDone"] == data["filesTotal"] == 20
    moved = File.objects.filter(project=owner.project, path="moved/dir")
    assert sorted(moved.values_list("id", flat=True)) == [f.id for f in files[:20]]
    [ended_event] = Event.objects.filter(type="folder.moved", data__jobId=job.id)
    assert ended_event.data["status"] == "failed" and ended_event.data["files"] == 20
