"""Concurrent requests and workers: identical transforms make one variant, one result."""

from __future__ import annotations

from typing import Any

import pytest

from events.models import Event
from files.models import File
from tests.factories import Actor, make_actor
from tests.helpers import at_once, uploaded_file
from tests.variants.images import encode, stripes
from variants.models import Variant
from variants.services import variant_process

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    return make_actor("racer")


def test_identical_transforms_at_once_make_one_variant(actor: Actor) -> None:
    file = uploaded_file(actor, encode(stripes(), "PNG"))

    def call() -> Any:
        response = actor.post(f"/v1/files/{file['id']}/transform", {"width": 64, "format": "png"})
        return response.status_code, response.json()["data"]["id"]

    results = at_once(*[call] * 4)
    assert {status for status, _ in results} == {202}
    assert len({variant_id for _, variant_id in results}) == 1
    assert Variant.objects.filter(file_id=file["id"], label="w64_cover_png_q80").count() == 1


def test_two_workers_on_one_variant_make_one_result(actor: Actor) -> None:
    file = uploaded_file(actor, encode(stripes(), "PNG"))
    stored = File.objects.get(id=file["id"])
    # Its own row, never sent to the broker: a worker the e2e tests left running on the test
    # queue may take the upload's thumbnail, but not this one.
    variant = Variant.objects.create(
        **actor.tenant.owner(),
        file=stored,
        version=1,
        source_object_id=stored.current_object_id,
        label="w20_cover_png_q80",
        width=20,
        fit="cover",
        format="png",
        quality=80,
    )

    outcomes = at_once(*[lambda: variant_process(variant_id=variant.id).status] * 2)
    assert sorted(outcomes) == ["ready", "skipped"]
    processed = Event.objects.filter(type="file.processed", data__variantId=variant.id)
    assert processed.count() == 1
