"""``placeholder``: the ThumbHash of an image's thumbnail, in every file object."""

from __future__ import annotations

import base64

import pytest
import thash
from PIL import Image

from tests.factories import Actor, pdf_bytes
from tests.helpers import uploaded_file
from tests.storage import put_to
from tests.variants.images import encode
from variants.models import Variant
from variants.services import variant_process

pytestmark = pytest.mark.django_db


def make_thumbnails() -> None:
    for variant_id in Variant.objects.filter(status="pending").values_list("id", flat=True):
        variant_process(variant_id=variant_id)


def test_an_image_gets_the_thumbnails_thumbhash_and_a_replace_renews_it(owner: Actor) -> None:
    file = uploaded_file(owner, encode(Image.new("RGB", (300, 200), (200, 30, 30)), "PNG"))
    assert file["placeholder"] is None  # no thumbnail yet
    make_thumbnails()
    shown = owner.get(f"/v1/files/{file['id']}").json()["data"]["placeholder"]
    listed = owner.get("/v1/files").json()["data"][0]["placeholder"]
    assert shown == listed
    average = thash.thumb_hash_to_average_rgba(list(base64.b64decode(shown)))
    assert average is not None
    red, green, blue, alpha = average
    assert (round(red * 255), round(green * 255), round(blue * 255)) == pytest.approx(
        (200, 30, 30), abs=12
    )
    assert alpha == pytest.approx(1.0)
    assert thash.thumb_hash_to_approximate_aspect_ratio(list(base64.b64decode(shown))) == (
        pytest.approx(1.5, rel=0.15)
    )

    blue_png = encode(Image.new("RGB", (100, 100), (20, 20, 220)), "PNG")
    started = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": len(blue_png)}
    ).json()
    assert put_to(started["upload"], blue_png).status_code == 200
    replaced = owner.post(f"/v1/files/{file['id']}/replace/complete")
    assert replaced.status_code == 200
    assert owner.get(f"/v1/files/{file['id']}").json()["data"]["placeholder"] is None
    make_thumbnails()
    renewed = owner.get(f"/v1/files/{file['id']}").json()["data"]["placeholder"]
    assert renewed not in (None, shown)
    average = thash.thumb_hash_to_average_rgba(list(base64.b64decode(renewed)))
    assert average is not None and average[2] > 0.7


def test_a_file_that_is_not_an_image_has_none(owner: Actor) -> None:
    file = uploaded_file(owner, pdf_bytes(), filename="a.pdf", contentType="application/pdf")
    make_thumbnails()
    assert owner.get(f"/v1/files/{file['id']}").json()["data"]["placeholder"] is None
