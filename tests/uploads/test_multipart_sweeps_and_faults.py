"""Multipart sessions under the sweeps (the single-upload sweep leaves them alone, the expiry
sweep aborts them) and with the store down (503, nothing changes)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from files.models import File, StoredObject
from files.services import files_expire_pending
from tests.factories import Actor
from tests.helpers import error_code
from tests.multipart import (
    BASE,
    complete,
    events,
    start_multipart,
)
from tests.storage import storages_with
from uploads.models import UploadSession
from uploads.services import uploads_expire

pytestmark = pytest.mark.django_db

# --- Sweeps ---------------------------------------------------------------------------------


def test_the_single_upload_sweep_leaves_multipart_files_alone(owner: Actor) -> None:
    data = start_multipart(owner, 3)
    files_expire_pending(now=timezone.now() + timedelta(days=365))
    assert File.objects.get(id=data["file"]["id"]).status == "pending"


def test_the_expiry_sweep_aborts_sessions_past_their_expiry(owner: Actor) -> None:
    stale = start_multipart(owner, 3)
    fresh = start_multipart(owner, 3)
    UploadSession.objects.filter(id=stale["upload"]["id"]).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )

    assert uploads_expire() == 1
    assert uploads_expire() == 0

    session = UploadSession.objects.get(id=stale["upload"]["id"])
    assert (session.status, session.abort_reason) == ("aborted", "expired")
    assert File.objects.get(id=stale["file"]["id"]).status == "failed"
    assert StoredObject.objects.get(id=session.stored_object_id).state == "discarded"
    assert UploadSession.objects.get(id=fresh["upload"]["id"]).status == "active"
    (aborted,) = events(owner, "upload.aborted")
    assert (aborted.data["uploadId"], aborted.data["reason"]) == (stale["upload"]["id"], "expired")


def test_the_store_being_down_is_a_503_and_changes_nothing(owner: Actor, settings) -> None:
    data = start_multipart(owner, 3)
    upload_id = data["upload"]["id"]
    # Nothing listens on the discard port.
    settings.STORAGES = storages_with(endpoint_url="http://127.0.0.1:9")
    responses = [
        owner.post(BASE, {"filename": "a", "contentType": "a/b", "size": 3}),
        owner.get(f"{BASE}/{upload_id}/parts"),
        complete(owner, upload_id, [{"partNumber": 1, "etag": "x"}]),
        owner.delete(f"{BASE}/{upload_id}"),
    ]

    for response in responses:
        assert response.status_code == 503
        assert error_code(response) == "STORAGE_UNAVAILABLE"
    assert UploadSession.objects.get().status == "active"
    assert File.objects.get().status == "pending"
    assert not events(owner, "upload.aborted")
