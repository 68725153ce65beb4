"""Per-project limits at upload, multipart and replace start and at complete, and
GET /v1/usage: what a client sees when its project's limits refuse it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.limits import limits_set
from accounts.models import BandwidthUsage
from files.models import File, StoredObject
from files.services.sweeps import files_purge_expired
from storage_service import objectstore
from tests.factories import Actor, jpeg_bytes, make_actor, pdf_bytes, png_bytes, upload_body
from tests.helpers import at_once, error_code, start_upload, uploaded_file
from tests.storage import put_to

MIB = 1024 * 1024


def limit(actor: Actor, **changes: Any) -> None:
    limits_set(project=actor.project, mode=actor.tenant.mode, changes=changes)


def usage(actor: Actor) -> dict[str, Any]:
    response = actor.get("/v1/usage")
    assert response.status_code == 200, response.json()
    return dict(response.json()["data"])


def multipart_body(size: int, content_type: str = "application/octet-stream") -> dict[str, Any]:
    return {"filename": "big.bin", "contentType": content_type, "size": size}


# --- Size and type --------------------------------------------------------------------------


def test_a_file_over_the_projects_size_limit_is_refused_at_every_start(owner: Actor) -> None:
    limit(owner, max_file_size_bytes=100)
    file = uploaded_file(owner, b"x" * 100, contentType="text/plain", filename="a.txt")

    refused = [
        owner.post("/v1/files/upload", upload_body(b"x" * 101, content_type="text/plain")),
        owner.post("/v1/uploads/multipart", multipart_body(101)),
        owner.post(f"/v1/files/{file['id']}/replace", {"contentType": "text/plain", "size": 101}),
    ]

    for response in refused:
        assert response.status_code == 413, response.json()
        assert response.json()["error"]["code"] == "FILE_TOO_LARGE"
        assert response.json()["error"]["details"] == {"maxBytes": 100}
    # Nothing was written: only the one uploaded file and its object.
    assert File.objects.for_tenant(owner.tenant).count() == 1
    assert StoredObject.objects.filter(project=owner.project).count() == 1


def test_types_match_exactly_or_by_their_family(owner: Actor) -> None:
    limit(owner, allowed_content_types=["image/*", "application/pdf"])

    assert owner.post("/v1/files/upload", upload_body(png_bytes())).status_code == 201
    assert (
        owner.post(
            "/v1/files/upload", upload_body(pdf_bytes(), content_type="application/pdf")
        ).status_code
        == 201
    )
    refused = owner.post(
        "/v1/files/upload", upload_body(b"hello", content_type="text/plain", filename="a.txt")
    )
    assert refused.status_code == 422
    assert refused.json()["error"] == {
        "code": "CONTENT_TYPE_NOT_ALLOWED",
        "message": refused.json()["error"]["message"],
        "details": {"allowed": ["image/*", "application/pdf"]},
    }
    multipart = owner.post("/v1/uploads/multipart", multipart_body(10 * MIB, "video/mp4"))
    assert multipart.status_code == 422 and error_code(multipart) == "CONTENT_TYPE_NOT_ALLOWED"


def test_replace_start_checks_the_new_type(owner: Actor) -> None:
    file = uploaded_file(owner)
    limit(owner, allowed_content_types=["image/png"])

    response = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": 10}
    )

    assert response.status_code == 422 and error_code(response) == "CONTENT_TYPE_NOT_ALLOWED"
    assert File.objects.get(id=file["id"]).replacement_object is None


def test_complete_checks_the_type_the_bytes_really_are(owner: Actor) -> None:
    # A generic declared type is allowed and not contradicted by PDF bytes; the sniffed type
    # is what the list is checked against at complete.
    limit(owner, allowed_content_types=["application/octet-stream", "image/*"])
    data = pdf_bytes()
    started = start_upload(owner, data, contentType="application/octet-stream", filename="x")
    assert put_to(started["upload"], data).status_code == 200

    response = owner.post(f"/v1/files/{started['file']['id']}/complete")

    assert response.status_code == 422, response.json()
    assert error_code(response) == "CONTENT_TYPE_NOT_ALLOWED"
    assert response.json()["error"]["details"]["detectedType"] == "application/pdf"
    assert File.objects.get(id=started["file"]["id"]).status == File.Status.FAILED


def test_limits_of_one_mode_leave_the_other_alone(owner: Actor) -> None:
    limits_set(project=owner.project, mode="live", changes={"max_file_size_bytes": 1})

    assert owner.post("/v1/files/upload", upload_body(png_bytes())).status_code == 201
    assert usage(owner)["limits"]["maxFileSizeBytes"] is None


# --- The storage quota ----------------------------------------------------------------------


def test_an_upload_past_the_quota_is_refused_with_the_figures(owner: Actor) -> None:
    uploaded_file(owner, b"a" * 600, contentType="text/plain", filename="a.txt")
    start_upload(owner, b"b" * 300, contentType="text/plain", filename="b.txt")  # reserves 300
    limit(owner, max_storage_bytes=1000)

    refused = owner.post(
        "/v1/files/upload", upload_body(b"c" * 101, content_type="text/plain", filename="c")
    )

    assert refused.status_code == 403
    assert error_code(refused) == "QUOTA_EXCEEDED"
    assert refused.json()["error"]["details"] == {
        "usedBytes": 900,
        "limitBytes": 1000,
        "requestedBytes": 101,
    }
    fits = owner.post(
        "/v1/files/upload", upload_body(b"c" * 100, content_type="text/plain", filename="c")
    )
    assert fits.status_code == 201


def test_multipart_and_replace_reserve_against_the_quota(owner: Actor) -> None:
    file = uploaded_file(owner, b"a" * 100, contentType="text/plain", filename="a.txt")
    limit(owner, max_storage_bytes=20 * MIB)

    started = owner.post("/v1/uploads/multipart", multipart_body(16 * MIB))
    assert started.status_code == 201, started.json()
    over = owner.post("/v1/uploads/multipart", multipart_body(4 * MIB))
    assert over.status_code == 403 and error_code(over) == "QUOTA_EXCEEDED"
    replace = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "text/plain", "size": 4 * MIB}
    )
    assert replace.status_code == 403 and error_code(replace) == "QUOTA_EXCEEDED"

    # Aborting the multipart upload gives its reservation back.
    upload_id = started.json()["data"]["upload"]["id"]
    assert owner.delete(f"/v1/uploads/multipart/{upload_id}").status_code == 200
    replace = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "text/plain", "size": 4 * MIB}
    )
    assert replace.status_code == 200, replace.json()


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_uploads_against_room_for_ten_give_exactly_ten(
    transactional_db: None,
) -> None:
    racer = make_actor("quota-racer")
    limit(racer, max_storage_bytes=10 * 1000)
    body = upload_body(b"x" * 1000, content_type="text/plain", filename="r.txt")

    responses = at_once(*[lambda: racer.post("/v1/files/upload", body) for _ in range(20)])

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] * 10 + [403] * 10, [r.json() for r in responses]
    assert File.objects.for_tenant(racer.tenant).count() == 10


# --- GET /v1/usage --------------------------------------------------------------------------


def _store_bytes(project_id: str) -> int:
    """What the store itself lists under the project's keys."""
    s3 = objectstore.client()
    total = 0
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=objectstore.bucket(), Prefix=f"{project_id}/"
    ):
        total += sum(item["Size"] for item in page.get("Contents", []))
    return total


def test_usage_is_what_the_store_holds_through_replace_copy_delete_and_purge(
    owner: Actor,
) -> None:
    first = uploaded_file(owner, png_bytes())
    second = uploaded_file(owner, b"t" * 1234, contentType="text/plain", filename="t.txt")
    # Replace: a second version; the first stays in the store.
    replaced = owner.post(
        f"/v1/files/{first['id']}/replace", {"contentType": "image/jpeg", "size": len(jpeg_bytes())}
    )
    assert put_to(replaced.json()["upload"], jpeg_bytes()).status_code == 200
    assert owner.post(f"/v1/files/{first['id']}/replace/complete").status_code == 200
    # Copy: no new bytes.
    assert owner.post(f"/v1/files/{first['id']}/copy", {}).status_code == 201
    # Delete: in the trash, still in the store.
    assert owner.delete(f"/v1/files/{second['id']}").status_code == 200

    expected = len(png_bytes()) + len(jpeg_bytes()) + 1234
    assert usage(owner)["storage"] == {"bytes": expected, "files": 2}
    assert _store_bytes(owner.project.id) == expected

    # Purge: the trash leaves the store and the usage.
    files_purge_expired(grace_days=0)
    assert usage(owner)["storage"] == {"bytes": expected - 1234, "files": 2}
    assert _store_bytes(owner.project.id) == expected - 1234


def test_usage_shows_this_months_bandwidth_and_the_limits(owner: Actor, sibling: Actor) -> None:
    today = timezone.now().date()
    BandwidthUsage.objects.create(**owner.tenant.owner(), day=today, bytes=700, downloads=1)
    BandwidthUsage.objects.create(
        **owner.tenant.owner(), day=today.replace(day=1) - timedelta(days=1), bytes=5
    )
    limit(owner, max_storage_bytes=10**9, allowed_content_types=["image/*"])

    answer = usage(owner)

    assert answer["bandwidth"] == {"month": f"{today:%Y-%m}", "bytes": 700}
    assert answer["limits"] == {
        "maxStorageBytes": 10**9,
        "maxFileSizeBytes": None,
        "allowedContentTypes": ["image/*"],
    }
    assert usage(sibling) == {
        "storage": {"bytes": 0, "files": 0},
        "bandwidth": {"month": f"{today:%Y-%m}", "bytes": 0},
        "limits": {"maxStorageBytes": None, "maxFileSizeBytes": None, "allowedContentTypes": None},
    }
