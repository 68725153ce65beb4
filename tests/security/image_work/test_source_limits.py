"""Each transform is bounded by its source: bytes of the original read (never past the cap,
even from an object that grew), pixels decoded (16-bit samples counting twice), and no
enlargement of a tiny image to a huge one."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator

import pytest
import requests
from django.test import override_settings
from PIL import Image

from storage_service import objectstore
from tests.factories import Actor
from tests.helpers import uploaded_file
from tests.security.image_work.stack import (
    Stack,
    StoreProxy,
    client_for,
    noise_png,
    png16,
)
from tests.storage import storages_with
from tests.variants.images import decoded, encode, png_bomb, stripes
from variants import services as variant_services
from variants.models import Variant

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# --- Source bytes -----------------------------------------------------------------------------


def test_an_original_over_the_byte_cap_is_refused_before_a_byte_of_it_is_read(
    stack: Stack,
) -> None:
    cap = 100_000
    original = noise_png((200, 200))  # about 120 KB
    assert len(original) > cap
    limits = {"SERVICE_VARIANT_MAX_SOURCE_BYTES": str(cap)}
    with StoreProxy() as proxy, stack.api(**limits) as base:
        stack.worker({"AWS_S3_ENDPOINT_URL": proxy.url, **limits})
        client = client_for(base, "big-original")
        file_id = client.upload(original)

        # An explicit transform is refused at once, with the reason.
        refused = client.transform(file_id, width=100)
        assert refused.status_code == 422
        error = refused.json()["error"]
        assert error["code"] == "NOT_PROCESSABLE"
        assert f"at most {cap} bytes" in error["message"]
        assert error["details"] == {"size": len(original), "maxSourceBytes": cap}

        # The automatic thumbnail fails with the reason, and the worker read none of the bytes.
        thumb = client.finished(file_id, client.thumbnail(file_id)["id"])
        assert thumb["status"] == "failed"
        assert thumb["failureReason"] == (
            f"The original is {len(original)} bytes; variants are made from originals of at "
            f"most {cap} bytes."
        )
        assert proxy.received < 4096, f"the worker read {proxy.received} bytes from the store"

        # An original under the cap is still made into variants.
        small = client.upload(noise_png((100, 100)))
        assert client.finished(small, client.thumbnail(small)["id"])["status"] == "ready"


def test_the_worker_reads_no_more_than_the_cap_from_an_object_that_grew(
    owner: Actor, override_objectstore: Callable[[str], None]
) -> None:
    """The file's row says a small object; by the GET it was replaced by a large one. The
    ranged GET stops at the cap, and the variant fails with the size the store reported."""
    cap = 50_000
    file = uploaded_file(owner, noise_png((60, 60)))  # about 11 KB
    [thumb] = Variant.objects.filter(file_id=file["id"])
    key = thumb.source_object.storage_key
    grown = noise_png((600, 600), seed=2)  # about 1 MB
    store_client = objectstore.client()  # the real store, not through the proxy

    def grow() -> None:
        store_client.put_object(Bucket=objectstore.bucket(), Key=key, Body=grown)

    with StoreProxy(before_get=grow) as proxy:
        override_objectstore(proxy.url)
        with override_settings(SERVICE_VARIANT_MAX_SOURCE_BYTES=cap):
            outcome = variant_services.variant_process(variant_id=thumb.id)
    assert outcome.status == "failed"
    assert Variant.objects.get(id=thumb.id).failure_reason == (
        f"The original is {len(grown)} bytes; variants are made from originals of at "
        f"most {cap} bytes."
    )
    # The cap, one byte more, and the response headers: not the megabyte the object now is.
    assert proxy.received < cap + 4096, f"read {proxy.received} bytes"


@pytest.fixture
def override_objectstore() -> Iterator[Callable[[str], None]]:
    """Point this process's object-store client at another endpoint for the test."""
    stack: contextlib.ExitStack = contextlib.ExitStack()

    def point(url: str) -> None:
        stack.enter_context(override_settings(STORAGES=storages_with(endpoint_url=url)))

    try:
        yield point
    finally:
        stack.close()


# --- Pixels -----------------------------------------------------------------------------------


def test_a_header_of_more_than_50_megapixels_is_refused_before_decoding(owner: Actor) -> None:
    file = uploaded_file(owner, png_bomb(8000, 7000))  # 56 MP claimed by a 1 KB file
    [thumb] = Variant.objects.filter(file_id=file["id"])
    outcome = variant_services.variant_process(variant_id=thumb.id)
    assert outcome.status == "failed"
    assert outcome.reason == (
        "The image has 8000x7000 pixels, more than the 50000000 this service decodes."
    )


@override_settings(SERVICE_VARIANT_MAX_PIXELS=15_000)
def test_sixteen_bit_samples_count_twice_against_the_pixel_cap(owner: Actor) -> None:
    deep = uploaded_file(owner, png16((100, 100)), filename="deep.png")
    flat = uploaded_file(owner, encode(stripes((100, 100)), "PNG"), filename="flat.png")
    [deep_thumb] = Variant.objects.filter(file_id=deep["id"])
    [flat_thumb] = Variant.objects.filter(file_id=flat["id"])

    refused = variant_services.variant_process(variant_id=deep_thumb.id)
    assert (refused.status, refused.reason) == (
        "failed",
        "The image has 100x100 pixels (16-bit samples count each pixel 2 times), more than "
        "the 15000 this service decodes.",
    )
    assert variant_services.variant_process(variant_id=flat_thumb.id).status == "ready"


# --- Enlargement ------------------------------------------------------------------------------


def test_a_tiny_image_is_never_enlarged_to_a_4096_pixel_avif(
    transactional_db: None, api_base: str, celery_worker: subprocess.Popen[bytes]
) -> None:
    # The session's server and worker: nothing here depends on a setting or on the pool.
    client = client_for(api_base, "tiny")
    file_id = client.upload(encode(Image.new("RGB", (1, 5), (200, 40, 40)), "PNG"))
    cover = client.transform(file_id, width=4096, height=4096, format="avif")
    inside = client.transform(file_id, width=4096, height=4096, fit="inside", format="avif")
    assert cover.status_code == inside.status_code == 202

    made_cover = client.finished(file_id, cover.json()["data"]["id"])
    made_inside = client.finished(file_id, inside.json()["data"]["id"])
    thumb = client.finished(file_id, client.thumbnail(file_id)["id"])

    # The box is shrunk to the source's scale, keeping its shape: the answer says so.
    assert made_cover["status"] == made_inside["status"] == thumb["status"] == "ready"
    assert (made_cover["width"], made_cover["height"]) == (1, 1)
    assert (made_inside["width"], made_inside["height"]) == (1, 5)
    assert (thumb["width"], thumb["height"]) == (1, 5)
    assert made_cover["params"]["width"] == 4096  # as requested
    url = client.post(f"/files/{file_id}/variants/{made_cover['id']}/download-url", {}).json()[
        "url"
    ]
    image = decoded(requests.get(url, timeout=30).content)
    assert (image.format, image.size) == ("AVIF", (1, 1))
