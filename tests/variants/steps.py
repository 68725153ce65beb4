"""Variants as a client asks for them (transform, list, download) and as the worker makes
them (processing called directly; the worker's task is a one-line wrapper)."""

from __future__ import annotations

from typing import Any

from tests.factories import Actor
from tests.helpers import uploaded_file
from tests.storage import get_from
from tests.variants.images import encode, stripes
from variants.models import Variant
from variants.services import variant_process

THUMB = "w256_h256_inside_webp_q80"


def image_file(actor: Actor, data: bytes | None = None, **body: Any) -> dict[str, Any]:
    data = encode(stripes((600, 200)), "PNG") if data is None else data
    return uploaded_file(actor, data, **body)


def transform(actor: Actor, file_id: str, **body: Any) -> Any:
    return actor.post(f"/v1/files/{file_id}/transform", body)


def process_all() -> None:
    for variant_id in Variant.objects.filter(status="pending").values_list("id", flat=True):
        variant_process(variant_id=variant_id)


def variants_of(actor: Actor, file_id: str) -> list[dict[str, Any]]:
    response = actor.get(f"/v1/files/{file_id}/variants")
    assert response.status_code == 200, response.json()
    return response.json()["data"]


def variant_bytes(actor: Actor, file_id: str, variant_id: str) -> bytes:
    response = actor.post(f"/v1/files/{file_id}/variants/{variant_id}/download-url", {})
    assert response.status_code == 200, response.json()
    fetched = get_from(response.json()["url"])
    assert fetched.status_code == 200
    return fetched.content
