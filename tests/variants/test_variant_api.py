"""The variant endpoints: transform requests (202, the same variant for the same parameters,
every refusal) and the list and downloads of variants, against real PostgreSQL and
SeaweedFS.

Processing is called directly here (the worker's task is a one-line wrapper); the e2e tests
run it in a real Celery worker.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from accounts.models import BandwidthUsage
from events.models import Event
from tests.factories import Actor
from tests.helpers import error_code, start_upload, uploaded_file
from tests.storage import get_from
from tests.variants.images import SVG, encode, stripes
from tests.variants.steps import (
    THUMB,
    image_file,
    process_all,
    transform,
    variants_of,
)
from variants.models import Variant

pytestmark = pytest.mark.django_db

# --- Transform requests ---------------------------------------------------------------------


def test_transform_answers_202_with_a_pending_variant(owner: Actor) -> None:
    file = image_file(owner)
    response = transform(owner, file["id"], width=120, height=80)
    assert response.status_code == 202
    variant = response.json()["data"]
    assert variant["id"].startswith("var_")
    assert variant["status"] == "pending"
    assert variant["label"] == "w120_h80_cover_webp_q80"
    assert variant["params"] == {
        "width": 120,
        "height": 80,
        "fit": "cover",
        "format": "webp",
        "quality": 80,
    }
    assert variant["fileId"] == file["id"] and variant["fileVersion"] == 1
    assert variant["width"] is None and variant["size"] is None
    assert variant["contentType"] == "image/webp"


def test_identical_parameters_give_the_same_variant(owner: Actor) -> None:
    file = image_file(owner)
    first = transform(owner, file["id"], width=100).json()["data"]
    again = transform(owner, file["id"], width=100, fit="cover", format="webp", quality=80)
    assert again.status_code == 202 and again.json()["data"]["id"] == first["id"]
    other = transform(owner, file["id"], width=100, quality=81).json()["data"]
    assert other["id"] != first["id"]
    # The thumbnail made at upload is the same variant as asking for its parameters.
    thumb = transform(owner, file["id"], width=256, height=256, fit="inside").json()["data"]
    assert thumb["label"] == THUMB
    assert Variant.objects.filter(file_id=file["id"]).count() == 3


def test_a_processed_variant_is_returned_ready_without_new_work(owner: Actor) -> None:
    file = image_file(owner)
    transform(owner, file["id"], width=100)
    process_all()
    again = transform(owner, file["id"], width=100).json()["data"]
    assert again["status"] == "ready" and again["width"] == 100
    assert Variant.objects.get(id=again["id"]).attempts == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "width"),
        ({"fit": "cover"}, "height"),
        ({"width": 0}, "width"),
        ({"width": 4097}, "width"),
        ({"height": 5000}, "height"),
        ({"width": "100"}, "width"),
        ({"width": 10.5}, "width"),
        ({"width": True}, "width"),
        ({"width": 10, "fit": "crop"}, "fit"),
        ({"width": 10, "format": "gif"}, "format"),
        ({"width": 10, "quality": 0}, "quality"),
        ({"width": 10, "quality": 101}, "quality"),
        ({"width": 10, "sharpen": True}, "sharpen"),
    ],
)
def test_invalid_transform_bodies(owner: Actor, body: dict[str, Any], field: str) -> None:
    file = image_file(owner)
    response = transform(owner, file["id"], **body)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]


def test_the_largest_dimensions_are_accepted(owner: Actor) -> None:
    file = image_file(owner)
    assert transform(owner, file["id"], width=4096, height=4096).status_code == 202


@pytest.mark.parametrize(
    ("data", "content_type", "filename"),
    [
        (b"just some text\n", "text/plain", "notes.txt"),
        (SVG, "image/svg+xml", "logo.svg"),
        (b"this is not a png at all, only text", "image/png", "fake.png"),
        (encode(stripes((20, 20)), "BMP"), "image/bmp", "old.bmp"),
    ],
)
def test_not_processable_by_the_stored_bytes(
    owner: Actor, data: bytes, content_type: str, filename: str
) -> None:
    file = uploaded_file(owner, data, filename=filename, content_type=content_type)
    response = transform(owner, file["id"], width=10)
    assert response.status_code == 422
    assert error_code(response) == "NOT_PROCESSABLE"
    assert not Variant.objects.filter(file_id=file["id"]).exists()


def test_an_image_declared_as_octet_stream_is_judged_by_its_bytes(owner: Actor) -> None:
    file = image_file(owner, content_type="application/octet-stream", filename="blob")
    assert transform(owner, file["id"], width=10).status_code == 202


def test_a_file_not_yet_uploaded_is_409(owner: Actor) -> None:
    pending = start_upload(owner, encode(stripes(), "PNG"))["file"]
    response = transform(owner, pending["id"], width=10)
    assert response.status_code == 409
    assert error_code(response) == "FILE_NOT_UPLOADED"


def test_missing_deleted_and_foreign_files_are_404(owner: Actor, outsider: Actor) -> None:
    file = image_file(owner)
    for url_id in ("file_nope", "file_" + "0" * 26):
        assert error_code(transform(owner, url_id, width=10)) == "FILE_NOT_FOUND"
    foreign = transform(outsider, file["id"], width=10)
    missing = transform(outsider, "file_" + "0" * 26, width=10)
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert outsider.get(f"/v1/files/{file['id']}/variants").status_code == 404
    owner.delete(f"/v1/files/{file['id']}")
    assert error_code(transform(owner, file["id"], width=10)) == "FILE_NOT_FOUND"
    assert owner.get(f"/v1/files/{file['id']}/variants").status_code == 404


# --- Listing and downloads -------------------------------------------------------------------


def test_the_list_pages_with_a_cursor(owner: Actor) -> None:
    file = image_file(owner)
    for width in (10, 20, 30):
        transform(owner, file["id"], width=width)
    first = owner.get(f"/v1/files/{file['id']}/variants", {"limit": 2}).json()
    assert [v["label"] for v in first["data"]] == [THUMB, "w10_cover_webp_q80"]
    assert first["pagination"]["hasMore"] is True
    second = owner.get(
        f"/v1/files/{file['id']}/variants",
        {"limit": 2, "cursor": first["pagination"]["nextCursor"]},
    ).json()
    assert [v["label"] for v in second["data"]] == ["w20_cover_webp_q80", "w30_cover_webp_q80"]
    assert second["pagination"] == {"hasMore": False, "nextCursor": None}
    bad = owner.get(f"/v1/files/{file['id']}/variants", {"cursor": "tampered"})
    assert bad.status_code == 400
    assert owner.get(f"/v1/files/{file['id']}/variants", {"limit": 0}).status_code == 400
    # Given twice, a parameter is ambiguous: refused like on every other list.
    twice = owner.client.get(f"/v1/files/{file['id']}/variants?limit=1&limit=2")
    assert twice.status_code == 400
    assert twice.json()["error"]["details"] == {"limit": ["Given more than once."]}


def test_a_pending_variant_is_not_downloadable(owner: Actor) -> None:
    file = image_file(owner)
    [thumb] = variants_of(owner, file["id"])
    response = owner.post(f"/v1/files/{file['id']}/variants/{thumb['id']}/download-url", {})
    assert response.status_code == 409
    assert error_code(response) == "VARIANT_NOT_READY"
    assert response.json()["error"]["details"] == {"status": "pending"}


def test_variant_ids_are_scoped_to_their_file_and_project(owner: Actor, sibling: Actor) -> None:
    one, two = image_file(owner), image_file(owner)
    process_all()
    [thumb] = variants_of(owner, one["id"])
    wrong_file = owner.post(f"/v1/files/{two['id']}/variants/{thumb['id']}/download-url", {})
    assert wrong_file.status_code == 404 and error_code(wrong_file) == "VARIANT_NOT_FOUND"
    garbage = owner.post(f"/v1/files/{one['id']}/variants/var_x/download-url", {})
    assert error_code(garbage) == "VARIANT_NOT_FOUND"
    foreign = sibling.post(f"/v1/files/{one['id']}/variants/{thumb['id']}/download-url", {})
    assert foreign.status_code == 404 and error_code(foreign) == "FILE_NOT_FOUND"
    bad_expiry = owner.post(
        f"/v1/files/{one['id']}/variants/{thumb['id']}/download-url", {"expiresInSeconds": 5}
    )
    assert bad_expiry.status_code == 400


def test_the_variant_download_has_a_useful_name_and_type(owner: Actor) -> None:
    file = image_file(owner, filename="holiday.png")
    process_all()
    [thumb] = variants_of(owner, file["id"])
    response = owner.post(f"/v1/files/{file['id']}/variants/{thumb['id']}/download-url", {})
    fetched = get_from(response.json()["url"])
    assert fetched.headers["Content-Type"] == "image/webp"
    assert f"holiday_{THUMB}.webp" in fetched.headers["Content-Disposition"]
    event = Event.objects.filter(type="file.downloaded").latest("created_at")
    assert event.data["variantId"] == thumb["id"] and event.data["label"] == THUMB


def test_every_download_url_counts_bandwidth_per_project_per_day(
    owner: Actor, sibling: Actor
) -> None:
    data = encode(stripes((600, 200)), "PNG")
    file = image_file(owner, data)
    process_all()
    [thumb] = variants_of(owner, file["id"])
    for _ in range(2):
        assert owner.post(f"/v1/files/{file['id']}/download-url", {}).status_code == 200
    assert (
        owner.post(f"/v1/files/{file['id']}/variants/{thumb['id']}/download-url", {}).status_code
        == 200
    )
    usage = BandwidthUsage.objects.get(project=owner.project)
    assert usage.day == timezone.now().date()
    assert usage.bytes == 2 * len(data) + thumb["size"]
    assert usage.downloads == 3
    # Refused requests count nothing; other projects count apart.
    owner.post(f"/v1/files/{file['id']}/variants/var_x/download-url", {})
    sibling_file = image_file(
        sibling, b"\x89PNG" + b"0" * 10, content_type="application/octet-stream"
    )
    sibling.post(f"/v1/files/{sibling_file['id']}/download-url", {})
    assert BandwidthUsage.objects.get(project=owner.project).bytes == usage.bytes
    assert BandwidthUsage.objects.get(project=sibling.project).bytes == 14
