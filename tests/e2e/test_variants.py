"""Image variants end to end: real bytes through SeaweedFS, processed by a real Celery worker."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from events.models import Event
from files.models import File
from tests.factories import make_actor
from tests.helpers import uploaded_file, wait_for
from tests.storage import get_from
from tests.variants.images import corrupt_png, decoded, encode, jpeg_with_orientation, stripes
from variants.models import Variant
from variants.tasks import requeue_stale_variants

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("variant_messages"),
]


def test_upload_then_thumbnail_and_transform_through_the_worker(
    celery_worker: subprocess.Popen,
) -> None:
    owner = make_actor("e2e-variants")
    photo = jpeg_with_orientation(6, (1200, 600))  # shows as 600 wide, 1200 tall
    file = uploaded_file(owner, photo, filename="photo.jpg", content_type="image/jpeg")

    def ready_variants() -> list[dict[str, Any]] | None:
        variants = owner.get(f"/v1/files/{file['id']}/variants").json()["data"]
        return variants if variants and all(v["status"] == "ready" for v in variants) else None

    [thumb] = wait_for(ready_variants)
    assert (thumb["width"], thumb["height"]) == (128, 256)

    requested = owner.post(
        f"/v1/files/{file['id']}/transform",
        {"width": 300, "height": 300, "fit": "cover", "format": "jpeg", "quality": 70},
    )
    assert requested.status_code == 202
    variant_id = requested.json()["data"]["id"]
    variants = wait_for(lambda: len(ready_variants() or []) == 2 and ready_variants())
    made = next(v for v in variants if v["id"] == variant_id)
    url = owner.post(f"/v1/files/{file['id']}/variants/{variant_id}/download-url", {})
    image = decoded(get_from(url.json()["url"]).content)
    assert image.format == "JPEG" and image.size == (300, 300) == (made["width"], made["height"])
    # The original is untouched.
    original = owner.post(f"/v1/files/{file['id']}/download-url", {}).json()["url"]
    assert get_from(original).content == photo
    processed = Event.objects.filter(type="file.processed", data__fileId=file["id"])
    assert processed.count() == 2


def test_a_corrupt_image_fails_in_the_worker_which_keeps_working(
    celery_worker: subprocess.Popen,
) -> None:
    owner = make_actor("e2e-variants-bad")
    bad = uploaded_file(owner, corrupt_png(), filename="bad.png")

    def status() -> str | None:
        [thumb] = owner.get(f"/v1/files/{bad['id']}/variants").json()["data"]
        return thumb["status"] if thumb["status"] in {"ready", "failed"} else None

    assert wait_for(status) == "failed"
    assert Event.objects.filter(type="file.processing_failed", data__fileId=bad["id"]).exists()
    # The same worker goes on to process the next image.
    good = uploaded_file(owner, encode(stripes((300, 100)), "PNG"), filename="good.png")
    assert celery_worker.poll() is None
    [thumb] = wait_for(
        lambda: [
            v
            for v in owner.get(f"/v1/files/{good['id']}/variants").json()["data"]
            if v["status"] == "ready"
        ]
    )
    assert (thumb["width"], thumb["height"]) == (256, 85)


def test_the_sweep_redoes_a_variant_whose_message_was_lost(
    celery_worker: subprocess.Popen,
) -> None:
    owner = make_actor("e2e-variants-lost")
    file = uploaded_file(owner, encode(stripes((300, 100)), "PNG"))
    stored = File.objects.get(id=file["id"])
    # A variant row whose message never reached the broker, ten minutes ago and more.
    lost = Variant.objects.create(
        **owner.tenant.owner(),
        file=stored,
        version=1,
        source_object_id=stored.current_object_id,
        label="w30_cover_png_q80",
        width=30,
        fit="cover",
        format="png",
        quality=80,
    )
    Variant.objects.filter(id=lost.id).update(updated_at=timezone.now() - timedelta(hours=1))

    requeue_stale_variants.delay()

    wait_for(lambda: Variant.objects.get(id=lost.id).status == "ready")
    assert Variant.objects.get(id=lost.id).output_width == 30
