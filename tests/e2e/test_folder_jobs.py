"""Folder jobs end to end: the API starts the job, the real Celery worker runs it, and each
file's event and the folder's event reach a real receiver, signed, carrying the job's id."""

from __future__ import annotations

import subprocess
import time

import pytest

from jobs.models import Job
from tests.factories import make_actor
from tests.helpers import register_webhook
from tests.jobs.seeding import job_of, seed_files
from tests.webhook_receiver import Receiver, verify_signature

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_folder_move_delivers_each_files_event_and_the_folders(
    celery_worker: subprocess.Popen,
    receiver: Receiver,
) -> None:
    owner = make_actor("e2e-folder-jobs")
    outsider = make_actor("e2e-folder-jobs-outsider")
    _, secret = register_webhook(owner, receiver.url("/owner"), ["file.moved", "folder.moved"])
    register_webhook(outsider, receiver.url("/outsider"))
    files = seed_files(owner, ["inbox", "inbox/a", "inbox/a/b"])

    job = job_of(owner.post("/v1/folders/move", {"from": "inbox", "to": "done"}))
    arrived = receiver.wait_for("/owner", 4, timeout=60)
    bodies = [a.json() for a in arrived]
    moved = [b for b in bodies if b["type"] == "file.moved"]
    [folder] = [b for b in bodies if b["type"] == "folder.moved"]
    assert sorted(b["data"]["fileId"] for b in moved) == sorted(f.id for f in files)
    assert {b["data"]["jobId"] for b in moved} == {job.id}
    assert sorted(b["data"]["path"] for b in moved) == ["done", "done/a", "done/a/b"]
    assert folder["data"] == {
        "projectId": owner.project.id,
        "organizationId": owner.project.organization_id,
        "jobId": job.id,
        "from": "inbox",
        "to": "done",
        "files": 3,
        "status": "succeeded",
    }
    for item in arrived:
        assert verify_signature(secret, item.headers["SERVICE-Signature"], item.body)
    assert Job.objects.get(id=job.id).status == "succeeded"
    time.sleep(0.5)
    assert receiver.at("/outsider") == []  # another project's endpoint hears nothing of it
