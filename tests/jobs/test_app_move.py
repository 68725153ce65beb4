"""Job moved from files to jobs in Django's state only: a database holding a job made before
the move keeps it, read back through the moved model and served by ``GET /v1/jobs``, a run
goes on from its cursor, and the job's content type (with its permissions) follows it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection

from jobs.models import Job
from storage_service.ids import new_id
from tests.factories import Actor
from tests.jobs.seeding import run_job, seed_files

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def before_the_move() -> Iterator[None]:
    """The database as it was before jobs existed; migrated forward again afterwards,
    whatever the test did."""
    call_command("migrate", "jobs", "zero", verbosity=0)
    try:
        yield
    finally:
        call_command("migrate", verbosity=0)


def test_a_job_made_before_the_move_is_read_and_run_through_the_jobs_app(
    owner: Actor, before_the_move: None
) -> None:
    seed_files(owner, ["old", "old/a"])
    old_type = ContentType.objects.get(app_label="files", model="job")
    job_id = new_id("job")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO files_job (id, project_id, mode, type, status, params, files_done,
                                   failed_attempts, lease_token, created_at, updated_at)
            VALUES (%s, %s, 'test', 'folder.move', 'pending',
                    '{"from": "old", "to": "new"}', 0, 0, '', now(), now())
            """,
            [job_id, owner.project.id],
        )

    call_command("migrate", verbosity=0)

    job = Job.objects.get(id=job_id)
    assert (job.project_id, job.type, job.status) == (owner.project.id, "folder.move", "pending")
    assert job.params == {"from": "old", "to": "new"}
    listed = owner.get("/v1/jobs")
    assert listed.status_code == 200
    assert [item["id"] for item in listed.json()["data"]] == [job_id]
    # The runner takes it where it stands: the files' kinds are registered with it.
    assert run_job(job_id) == "done"
    shown = owner.get(f"/v1/jobs/{job_id}").json()["data"]
    assert (shown["status"], shown["filesDone"]) == ("succeeded", 2)
    assert sorted(f["path"] for f in owner.get("/v1/files").json()["data"]) == ["new", "new/a"]
    # The same content type row, now the jobs app's, with its permissions.
    new_type = ContentType.objects.get_for_model(Job)
    assert (new_type.id, new_type.app_label) == (old_type.id, "jobs")
    assert not ContentType.objects.filter(app_label="files", model="job").exists()
    assert Permission.objects.filter(content_type=new_type, codename="view_job").exists()
