"""Files made straight in the database for the job tests: uploaded files at given paths,
their stored objects live (the jobs never touch the store)."""

from __future__ import annotations

import secrets
import time
from typing import Any

from django.db import connection
from django.utils import timezone

from files.models import File, StoredObject
from jobs.models import Job
from jobs.services import job_run
from storage_service.ids import new_id
from tests.factories import Actor


def seed_files(actor: Actor, paths: list[str | None], **fields: Any) -> list[File]:
    """One uploaded file per path, their ids in the list's order (the order a job takes
    them) and above every id made before the call (ids are time-ordered; within one
    millisecond they are random, so each call starts in a new one)."""
    time.sleep(0.002)
    ids = sorted(new_id("file") for _ in paths)
    time.sleep(0.002)
    tenant = actor.tenant
    objects = StoredObject.objects.bulk_create(
        [
            StoredObject(
                **tenant.owner(),
                storage_key=f"seed/{secrets.token_hex(12)}",
                state=StoredObject.State.LIVE,
                declared_type="text/plain",
                declared_size=3,
                size=3,
                checksum="etag:seed",
            )
            for _ in paths
        ]
    )
    now = timezone.now()
    return File.objects.bulk_create(
        [
            File(
                id=file_id,
                **tenant.owner(),
                filename=fields.get("filename", f"f{index}.txt"),
                path=path,
                content_type="text/plain",
                size=3,
                status=fields.get("status", File.Status.UPLOADED),
                checksum="etag:seed",
                current_object=stored,
                uploaded_at=now,
            )
            for index, (file_id, path, stored) in enumerate(zip(ids, paths, objects, strict=True))
        ]
    )


def run_job(job_id: str, *, token: str | None = None) -> str:
    """The job's run, here in the test's process: the task's code without the broker."""
    return job_run(job_id=job_id, token=token or secrets.token_hex(16), slice_seconds=600)


def job_of(response: Any) -> Job:
    assert response.status_code == 202, response.json()
    return Job.objects.get(id=response.json()["data"]["id"])


def seed_folder_sql(actor: Actor, path: str, count: int) -> None:
    """``count`` uploaded files in ``path``, in two INSERT ... SELECT statements (what a
    20,000-file folder needs; bulk_create would take many seconds)."""
    tenant = actor.tenant
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH objects AS (
                INSERT INTO files_storedobject (project_id, mode, storage_key, state,
                    declared_type, declared_size, size, checksum, created_at)
                SELECT %(project)s, %(mode)s, 'seed/' || md5(random()::text) || n, 'live',
                    'text/plain', 3, 3, 'etag:seed', now()
                FROM generate_series(1, %(count)s) AS n
                RETURNING id
            )
            INSERT INTO files_file (id, project_id, mode, filename, path, content_type, size,
                status, version, checksum, current_object_id, created_at, updated_at,
                uploaded_at, status_before_delete)
            SELECT (%(ids)s::text[])[o.n], %(project)s, %(mode)s, 'f' || o.id || '.txt',
                %(path)s, 'text/plain', 3, 'uploaded', 1, 'etag:seed', o.id, now(), now(),
                now(), ''
            FROM (SELECT id, row_number() OVER () AS n FROM objects) AS o
            """,
            {
                "project": tenant.project_id,
                "mode": tenant.mode,
                "path": path,
                "count": count,
                "ids": [new_id("file") for _ in range(count)],
            },
        )
