"""The client generated from the served document (tests/e2e/test_generated_client.py) drives
folder operations, jobs and batches against the real stack: every answer parses into its
generated model."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from tests.e2e.test_generated_client import generated, ok  # noqa: F401 (fixture)
from tests.factories import make_actor
from tests.jobs.seeding import seed_files, seed_folder_sql

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_generated_client_moves_a_folder_follows_its_job_and_runs_a_batch(
    generated: Callable[[str], ModuleType],  # noqa: F811
    celery_worker: subprocess.Popen,
    api_base: str,
) -> None:
    owner = make_actor("generated-jobs")
    seed_folder_sql(owner, "reports/2026", 120)
    a, b = seed_files(owner, ["loose", "loose"])
    models = generated("models")
    api = {
        name: generated(f"api.{name.split('_')[0]}.{name}")
        for name in [
            "folders_move",
            "folders_delete",
            "folders_restore",
            "jobs_retrieve",
            "jobs_list",
            "files_batch",
        ]
    }
    base_url = api_base
    client = generated("").AuthenticatedClient(base_url=base_url, token=owner.key.raw_key)

    def call(name: str, expect: int, **kwargs: Any) -> Any:
        return ok(api[name].sync_detailed(client=client, **kwargs), expect)

    def finished(job_id: str) -> Any:
        deadline = time.monotonic() + 60
        while True:
            job = call("jobs_retrieve", 200, job_id=job_id).data
            if job.status.value in ("succeeded", "failed"):
                return job
            assert time.monotonic() < deadline, job
            time.sleep(0.2)

    started = call(
        "folders_move", 202, body=models.FolderMoveRequest(from_="reports", to="archive")
    ).data
    assert started.type_.value == "folder.move" and started.files_done == 0
    moved = finished(started.id)
    assert (moved.status.value, moved.files_done, moved.files_total) == ("succeeded", 120, 120)
    assert moved.error is None

    deleted = finished(
        call("folders_delete", 202, body=models.FolderRequest(path="archive")).data.id
    )
    restored = finished(
        call("folders_restore", 202, body=models.FolderRequest(path="archive/2026")).data.id
    )
    assert deleted.files_done == restored.files_done == 120
    listed = call("jobs_list", 200, limit=2)
    assert [j.id for j in listed.data] == [restored.id, deleted.id]
    assert listed.pagination.has_more is True

    missing = api["folders_move"].sync_detailed(
        client=client, body=models.FolderMoveRequest(from_="nothing", to=None)
    )
    assert missing.status_code == 404 and missing.parsed.error.code == "FOLDER_NOT_FOUND"

    batch = call(
        "files_batch",
        200,
        body=models.BatchRequest.from_dict(
            {
                "operations": [
                    {"op": "update", "id": a.id, "path": "sorted"},
                    {"op": "delete", "id": b.id},
                    {"op": "restore", "id": a.id + "x"},
                ]
            }
        ),
        idempotency_key="generated-batch-1",
    )
    assert [(r.op.value, r.status) for r in batch.data] == [
        ("update", 200),
        ("delete", 200),
        ("restore", 404),
    ]
