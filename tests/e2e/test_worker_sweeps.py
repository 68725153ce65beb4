"""The beat sweeps run by a real Celery worker over Redis, against real bytes."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from files.models import File, StoredObject
from files.tasks import expire_pending_uploads, purge_deleted_files
from storage_service import objectstore
from tests.factories import make_actor
from tests.helpers import start_upload, uploaded_file, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_beat_schedules_both_sweeps() -> None:
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"files.tasks.purge_deleted_files", "files.tasks.expire_pending_uploads"} <= tasks


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
