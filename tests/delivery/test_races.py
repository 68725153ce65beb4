"""First requests of a new size, racing: one variant, one row, one ``file.processed`` later."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.test import Client, override_settings

from tests.factories import Actor, make_actor
from tests.helpers import at_once, uploaded_file
from tests.variants.images import encode, stripes
from variants.models import Variant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    return make_actor("delivery-racer")


@override_settings(SERVICE_DELIVERY_TRANSFORM_HOLD_MS=0)
def test_first_requests_at_once_make_one_variant(actor: Actor) -> None:
    assert actor.post("/v1/delivery-keys", {}).status_code == 201
    file = uploaded_file(actor, encode(stripes(), "PNG"))
    url = actor.post(
        f"/v1/files/{file['id']}/delivery-url", {"transform": {"width": 48, "format": "png"}}
    ).json()["url"]
    path = urlsplit(url).path

    def call() -> int:
        return Client().get(path).status_code

    assert set(at_once(*[call] * 6)) == {307}
    assert Variant.objects.filter(file_id=file["id"], label="w48_cover_png_q80").count() == 1
