"""``manage.py backfill_placeholders``: images whose thumbnail was made before placeholders
existed get one, from the thumbnail's bytes in the real store; nothing else changes."""

from __future__ import annotations

import base64
import io

import pytest
import thash
from django.core.management import call_command
from PIL import Image

from files.models import File
from storage_service import objectstore
from tests.factories import Actor, pdf_bytes
from tests.helpers import uploaded_file
from tests.storage import put_to
from tests.variants.images import encode
from variants.models import Variant
from variants.services import THUMBNAIL, variant_process

pytestmark = pytest.mark.django_db


def make_thumbnails() -> None:
    for variant_id in Variant.objects.filter(status="pending").values_list("id", flat=True):
        variant_process(variant_id=variant_id)


def image_from_before_placeholders(actor: Actor, colour: tuple[int, int, int]) -> str:
    """An image uploaded and thumbnailed as before placeholders existed: thumbnail ready,
    ``placeholder`` null."""
    file = uploaded_file(actor, encode(Image.new("RGB", (300, 200), colour), "PNG"))
    make_thumbnails()
    File.objects.filter(id=file["id"]).update(placeholder=None)
    assert actor.get(f"/v1/files/{file['id']}").json()["data"]["placeholder"] is None
    return str(file["id"])


def backfill(*args: str) -> str:
    out = io.StringIO()
    call_command("backfill_placeholders", *args, stdout=out)
    return out.getvalue()


def average_rgb(placeholder: str) -> tuple[int, int, int]:
    average = thash.thumb_hash_to_average_rgba(list(base64.b64decode(placeholder)))
    assert average is not None
    red, green, blue, alpha = average
    assert alpha == pytest.approx(1.0)
    return round(red * 255), round(green * 255), round(blue * 255)


def test_an_image_thumbnailed_before_placeholders_gets_its_thumbhash(owner: Actor) -> None:
    red = image_from_before_placeholders(owner, (200, 30, 30))
    document = uploaded_file(owner, pdf_bytes(), filename="a.pdf", contentType="application/pdf")

    printed = backfill()

    assert printed.strip().endswith("Placeholders: 1 filled, 0 skipped of 1 file(s) examined.")
    shown = owner.get(f"/v1/files/{red}").json()["data"]["placeholder"]
    assert average_rgb(shown) == pytest.approx((200, 30, 30), abs=12)
    ratio = thash.thumb_hash_to_approximate_aspect_ratio(list(base64.b64decode(shown)))
    assert ratio == pytest.approx(1.5, rel=0.15)
    # The same hash the worker gives a new thumbnail.
    File.objects.filter(id=red).update(placeholder=None)
    Variant.objects.filter(file_id=red).update(status="pending")
    make_thumbnails()
    assert owner.get(f"/v1/files/{red}").json()["data"]["placeholder"] == shown
    assert owner.get(f"/v1/files/{document['id']}").json()["data"]["placeholder"] is None
    # Nothing left to do: a second run changes nothing.
    assert backfill().strip().endswith("0 filled, 0 skipped of 0 file(s) examined.")


def test_batches_resume_after_the_last_file_and_skip_an_unreadable_thumbnail(
    owner: Actor,
) -> None:
    ids = sorted(image_from_before_placeholders(owner, (20, 20, 220)) for _ in range(3))
    lost = Variant.objects.get(file_id=ids[1], label=THUMBNAIL.label)
    assert lost.output_object is not None
    objectstore.delete([lost.output_object.storage_key])

    printed = backfill("--batch-size", "2", "--after", ids[0])

    assert f"batch: 1 filled, 1 skipped, up to {ids[2]}" in printed
    placeholders = dict(File.objects.filter(id__in=ids).values_list("id", "placeholder"))
    assert placeholders[ids[0]] is None  # before --after: left for another run
    assert placeholders[ids[1]] is None  # its thumbnail is gone from the store
    assert average_rgb(placeholders[ids[2]])[2] > 180
    assert "1 filled, 0 skipped of 1" in backfill("--limit", "1")  # the first one, now


def test_a_replaced_files_old_thumbnail_gives_no_placeholder(owner: Actor) -> None:
    """The new version's thumbnail is not made yet: the old version's ready thumbnail must
    not give the new version a placeholder of the old picture."""
    file_id = image_from_before_placeholders(owner, (200, 30, 30))
    blue = encode(Image.new("RGB", (100, 100), (20, 20, 220)), "PNG")
    started = owner.post(
        f"/v1/files/{file_id}/replace", {"contentType": "image/png", "size": len(blue)}
    ).json()
    assert put_to(started["upload"], blue).status_code == 200
    assert owner.post(f"/v1/files/{file_id}/replace/complete").status_code == 200

    assert backfill().strip().endswith("0 filled, 0 skipped of 0 file(s) examined.")
    assert owner.get(f"/v1/files/{file_id}").json()["data"]["placeholder"] is None
