"""Making variants: the automatic thumbnail of every eligible upload and replacement, the
processing service (a new object, never the original; events; hostile images; the pixel
cap), and purges and the stale sweep, against real PostgreSQL and SeaweedFS.

Processing is called directly here; the e2e tests run it in a real Celery worker.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.test import override_settings
from django.utils import timezone

from events.models import Event
from files.models import File, StoredObject
from files.services import files_purge_expired
from storage_service import objectstore
from tests.factories import Actor
from tests.helpers import error_code, uploaded_file
from tests.storage import get_from, put_to
from tests.variants.images import (
    corrupt_png,
    decoded,
    encode,
    jpeg_with_orientation,
    png_bomb,
    stripes,
    truncated_jpeg,
)
from tests.variants.steps import (
    THUMB,
    image_file,
    process_all,
    transform,
    variant_bytes,
    variants_of,
)
from variants import services as variants_services
from variants.models import Variant
from variants.services import variant_process, variants_requeue_stale

pytestmark = pytest.mark.django_db

# --- Automatic thumbnails --------------------------------------------------------------------


def test_every_eligible_upload_gets_a_thumbnail(owner: Actor) -> None:
    file = image_file(owner, encode(stripes((600, 200)), "JPEG"), content_type="image/jpeg")
    [thumb] = variants_of(owner, file["id"])
    assert thumb["label"] == THUMB and thumb["status"] == "pending"
    process_all()
    [thumb] = variants_of(owner, file["id"])
    assert thumb["status"] == "ready"
    assert (thumb["width"], thumb["height"]) == (256, 85)
    image = decoded(variant_bytes(owner, file["id"], thumb["id"]))
    assert image.format == "WEBP" and image.size == (256, 85)
    assert thumb["size"] == len(variant_bytes(owner, file["id"], thumb["id"]))


def test_files_that_are_not_images_get_no_thumbnail(owner: Actor) -> None:
    file = uploaded_file(owner, b"hello\n", filename="a.txt", content_type="text/plain")
    assert variants_of(owner, file["id"]) == []


def test_a_replacement_gets_its_own_thumbnail_and_the_old_stays(owner: Actor) -> None:
    file = image_file(owner)
    process_all()
    new = encode(stripes((200, 400)), "PNG")
    started = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": len(new)}
    ).json()
    assert put_to(started["upload"], new).status_code == 200
    assert owner.post(f"/v1/files/{file['id']}/replace/complete").status_code == 200
    process_all()
    thumbs = variants_of(owner, file["id"])
    assert [(v["fileVersion"], v["label"], v["status"]) for v in thumbs] == [
        (1, THUMB, "ready"),
        (2, THUMB, "ready"),
    ]
    assert (thumbs[0]["width"], thumbs[0]["height"]) == (256, 85)
    assert (thumbs[1]["width"], thumbs[1]["height"]) == (128, 256)
    # Transforms apply to the current version.
    assert transform(owner, file["id"], width=10).json()["data"]["fileVersion"] == 2


def test_a_replacement_with_a_non_image_gets_no_thumbnail(owner: Actor) -> None:
    file = image_file(owner)
    text = b"now it is text\n"
    started = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "text/plain", "size": len(text)}
    ).json()
    put_to(started["upload"], text)
    owner.post(f"/v1/files/{file['id']}/replace/complete")
    assert [v["fileVersion"] for v in variants_of(owner, file["id"])] == [1]
    assert error_code(transform(owner, file["id"], width=10)) == "NOT_PROCESSABLE"


# --- Processing ------------------------------------------------------------------------------


def test_processing_writes_a_new_object_and_never_touches_the_original(owner: Actor) -> None:
    original = jpeg_with_orientation(6, (400, 200))
    file = image_file(owner, original, content_type="image/jpeg", filename="p.jpg")
    variant = transform(owner, file["id"], width=50, height=50, fit="cover", format="png")
    process_all()
    ready = Variant.objects.get(id=variant.json()["data"]["id"])
    assert ready.status == "ready" and ready.output_object is not None
    assert ready.output_object.state == "live"
    assert (
        ready.output_object.storage_key
        != File.objects.get(id=file["id"]).current_object.storage_key
    )
    image = decoded(variant_bytes(owner, file["id"], ready.id))
    assert image.format == "PNG" and image.size == (50, 50)
    # The original is byte for byte what was uploaded.
    response = owner.post(f"/v1/files/{file['id']}/download-url", {})
    assert get_from(response.json()["url"]).content == original


def test_processed_and_failed_events(owner: Actor) -> None:
    file = image_file(owner)
    Variant.objects.all().delete()
    good = transform(owner, file["id"], width=30).json()["data"]
    process_all()
    event = Event.objects.get(type="file.processed")
    assert event.data["variantId"] == good["id"]
    assert event.data["fileId"] == file["id"]
    assert event.data["label"] == "w30_cover_webp_q80"
    assert event.data["variant"]["status"] == "ready"
    assert event.data["variant"]["width"] == 30
    assert event.data["projectId"] == owner.project.id


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (corrupt_png(), "corrupt"),
        (truncated_jpeg(), "corrupt"),
        (png_bomb(), "too large"),
    ],
)
def test_corrupt_truncated_and_bomb_images_end_failed(
    owner: Actor, data: bytes, reason: str
) -> None:
    content_type = "image/jpeg" if data[:2] == b"\xff\xd8" else "image/png"
    file = uploaded_file(owner, data, content_type=content_type)
    [thumb] = variants_of(owner, file["id"])
    process_all()
    [thumb] = variants_of(owner, file["id"])
    assert thumb["status"] == "failed"
    assert reason in thumb["failureReason"]
    event = Event.objects.get(type="file.processing_failed")
    assert event.data["variantId"] == thumb["id"]
    assert reason in event.data["reason"]
    download = owner.post(f"/v1/files/{file['id']}/variants/{thumb['id']}/download-url", {})
    assert download.status_code == 409 and error_code(download) == "VARIANT_NOT_READY"
    # No result object was left behind.
    assert Variant.objects.get(id=thumb["id"]).output_object_id is None


@override_settings(SERVICE_VARIANT_MAX_PIXELS=10_000)
def test_the_pixel_cap_is_a_setting(owner: Actor) -> None:
    file = image_file(owner, encode(stripes((200, 100)), "PNG"))
    process_all()
    [thumb] = variants_of(owner, file["id"])
    assert thumb["status"] == "failed" and "10000" in thumb["failureReason"]


def test_processing_twice_does_nothing_more(owner: Actor) -> None:
    file = image_file(owner)
    [thumb] = variants_of(owner, file["id"])
    assert variant_process(variant_id=thumb["id"]).status == "ready"
    assert variant_process(variant_id=thumb["id"]).status == "skipped"
    assert variant_process(variant_id="var_missing").status == "skipped"
    assert Event.objects.filter(type="file.processed").count() == 1


def test_a_purged_original_fails_the_variant(owner: Actor) -> None:
    file = image_file(owner)
    objectstore.delete([File.objects.get(id=file["id"]).current_object.storage_key])
    process_all()
    [thumb] = variants_of(owner, file["id"])
    assert thumb["status"] == "failed" and "no longer in the store" in thumb["failureReason"]


# --- Purge and the stale sweep ---------------------------------------------------------------


def test_purging_a_file_removes_its_variants_objects(owner: Actor) -> None:
    file = image_file(owner)
    transform(owner, file["id"], width=40)
    process_all()
    keys = [
        v.output_object.storage_key
        for v in Variant.objects.select_related("output_object")
        if v.output_object is not None
    ]
    assert len(keys) == 2 and all(objectstore.head(key) for key in keys)
    owner.delete(f"/v1/files/{file['id']}")
    File.objects.filter(id=file["id"]).update(deleted_at=timezone.now() - timedelta(days=30))
    report = files_purge_expired()
    assert report.files == [file["id"]]
    assert report.objects_removed == 3  # the original and both variants
    assert all(objectstore.head(key) is None for key in keys)


def test_a_copy_keeps_the_shared_original_but_not_the_purged_files_variants(
    owner: Actor,
) -> None:
    file = image_file(owner)
    process_all()
    copy = owner.post(f"/v1/files/{file['id']}/copy", {"filename": "copy.png"}).json()
    thumb_key = Variant.objects.get(file_id=file["id"]).output_object.storage_key  # type: ignore[union-attr]
    owner.delete(f"/v1/files/{file['id']}")
    File.objects.filter(id=file["id"]).update(deleted_at=timezone.now() - timedelta(days=30))
    files_purge_expired()
    assert objectstore.head(thumb_key) is None
    original = File.objects.get(id=copy["id"]).current_object
    assert objectstore.head(original.storage_key) is not None
    # The copy can still have variants of its own.
    assert transform(owner, copy["id"], width=10).status_code == 202
    process_all()
    assert Variant.objects.get(file_id=copy["id"]).status == "ready"


def test_a_result_finished_after_the_purge_is_discarded(owner: Actor) -> None:
    file = image_file(owner)
    [thumb] = variants_of(owner, file["id"])
    File.objects.filter(id=file["id"]).update(
        status="deleted", deleted_at=timezone.now(), purged_at=timezone.now()
    )
    assert variant_process(variant_id=thumb["id"]).status == "skipped"
    output = Variant.objects.get(id=thumb["id"]).output_object
    assert output is not None and output.state == StoredObject.State.DISCARDED


def test_the_sweep_resends_stale_variants_and_gives_up_in_the_end(owner: Actor) -> None:
    file = image_file(owner)
    [thumb] = variants_of(owner, file["id"])
    later = timezone.now() + timedelta(hours=1)
    # A worker that claimed it and died: processing, long ago.
    Variant.objects.filter(id=thumb["id"]).update(
        status="processing", claim="dead-worker", attempts=1
    )
    assert variants_requeue_stale() == 0  # not stale yet
    assert variants_requeue_stale(now=later) == 1
    assert Variant.objects.get(id=thumb["id"]).status == "pending"
    # The dead worker's claim is void: running it again produces the variant.
    assert variant_process(variant_id=thumb["id"]).status == "ready"
    # One that keeps losing its worker fails after SERVICE_VARIANT_MAX_ATTEMPTS claims.
    other = transform(owner, file["id"], width=10).json()["data"]
    Variant.objects.filter(id=other["id"]).update(status="processing", attempts=3)
    assert variants_requeue_stale(now=later) == 1
    failed = Variant.objects.get(id=other["id"])
    assert failed.status == "failed" and "Gave up after 3 attempts" in failed.failure_reason
    assert Event.objects.filter(type="file.processing_failed", data__variantId=other["id"]).exists()


def test_a_broker_that_is_down_never_fails_the_request(
    owner: Actor, variant_messages: None, django_capture_on_commit_callbacks: Any
) -> None:
    with (
        mock.patch.object(variants_services.app, "send_task", side_effect=ConnectionError("down")),
        django_capture_on_commit_callbacks(execute=True) as callbacks,
    ):
        file = image_file(owner)
        response = transform(owner, file["id"], width=10)
    assert response.status_code == 202
    assert len(callbacks) >= 2  # the thumbnail's and the transform's messages were attempted
    # Both variants wait, pending, for the sweep to send them again.
    assert set(Variant.objects.values_list("status", flat=True)) == {"pending"}
