"""The beat sweeps run by a real Celery worker over Redis, against real bytes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from events.models import Event
from files.models import File, StoredObject
from files.tasks import expire_pending_uploads, purge_deleted_files
from storage_service import objectstore
from storage_service.timefmt import iso_required
from tests.factories import make_actor
from tests.helpers import download, start_upload, uploaded_file, wait_for
from tests.subprocesses import database_url

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_beat_schedules_both_sweeps() -> None:
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {
        "files.tasks.purge_deleted_files",
        "files.tasks.expire_pending_uploads",
        "files.tasks.expire_files",
    } <= tasks


def test_worker_purges_an_expired_deleted_file(celery_worker: subprocess.Popen) -> None:
    owner = make_actor("sweeper")
    file = uploaded_file(owner)
    owner.delete(f"/v1/files/{file['id']}")
    File.objects.filter(id=file["id"]).update(deleted_at=timezone.now() - timedelta(days=30))
    key = File.objects.get(id=file["id"]).current_object.storage_key

    purge_deleted_files.delay()

    wait_for(lambda: File.objects.get(id=file["id"]).purged_at is not None)
    wait_for(lambda: objectstore.head(key) is None)
    restore = owner.post(f"/v1/files/{file['id']}/restore")
    assert restore.status_code == 409
    assert restore.json()["error"]["code"] == "OBJECT_NOT_FOUND"


def test_worker_fails_an_upload_whose_bytes_never_came(celery_worker: subprocess.Popen) -> None:
    owner = make_actor("sweeper-2")
    stale = start_upload(owner)["file"]
    fresh = start_upload(owner)["file"]
    StoredObject.objects.filter(id=File.objects.get(id=stale["id"]).current_object_id).update(
        upload_expires_at=timezone.now() - timedelta(days=2)
    )

    expire_pending_uploads.delay()

    wait_for(lambda: File.objects.get(id=stale["id"]).status == "failed")
    assert File.objects.get(id=fresh["id"]).status == "pending"


@pytest.fixture
def celery_beat(celery_worker: subprocess.Popen, tmp_path: Path) -> Iterator[subprocess.Popen]:
    """A real beat process sending the sweeps to the test worker, the expiry sweep every
    second (the deployment's default is every 30 s)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
        "DATABASE_URL": database_url(),
        "SERVICE_EXPIRY_INTERVAL_SECONDS": "1",
    }
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "storage_service", "beat",
         "--schedule", str(tmp_path / "beat-schedule"), "--loglevel", "WARNING"],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    yield beat
    beat.terminate()
    try:
        beat.wait(timeout=15)
    except subprocess.TimeoutExpired:
        beat.kill()


def test_beat_and_a_worker_delete_a_file_once_it_expires(celery_beat: subprocess.Popen) -> None:
    owner = make_actor("expiring")
    soon = timezone.now() + timedelta(seconds=3)
    file = uploaded_file(owner, expiresAt=iso_required(soon))
    kept = uploaded_file(owner, expiresAt=iso_required(soon + timedelta(days=1)))

    wait_for(
        lambda: File.objects.get(id=file["id"]).status == "deleted",
        timeout=60,
        what="the expired file deleted by the sweep",
    )

    assert owner.get(f"/v1/files/{file['id']}").status_code == 404
    event = Event.objects.get(project=owner.project, type="file.expired")
    assert event.data["fileId"] == file["id"] and event.data["expiresAt"] == file["expiresAt"]
    assert not Event.objects.filter(project=owner.project, type="file.deleted").exists()
    assert File.objects.get(id=kept["id"]).status == "uploaded"
    # As DELETE would: the bytes stay for the grace window, and restore brings them back.
    restored = owner.post(f"/v1/files/{file['id']}/restore")
    assert restored.status_code == 200 and restored.json()["expiresAt"] is None
    assert download(owner, file["id"]) == download(owner, kept["id"])
