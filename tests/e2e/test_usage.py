"""GET /v1/usage against what the store itself lists, with variants made by a real worker
and the purge run by it."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from files.models import File, UsageDelta
from files.tasks import fold_usage, purge_deleted_files
from files.usage import held_bytes, usage_recount
from storage_service import objectstore
from tests.factories import make_actor, png_bytes
from tests.helpers import uploaded_file, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("variant_messages"),
]


def listed_bytes(project_id: str) -> tuple[int, int]:
    """The bytes and objects the store lists under the project's keys (boto3, SeaweedFS)."""
    s3 = objectstore.client()
    total = count = 0
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=objectstore.bucket(), Prefix=f"{project_id}/"
    ):
        for item in page.get("Contents", []):
            total += item["Size"]
            count += 1
    return total, count


def test_usage_counts_variants_versions_the_trash_and_drops_what_is_purged(
    celery_worker: subprocess.Popen,
) -> None:
    owner = make_actor("e2e-usage")
    photo = uploaded_file(owner, png_bytes(), filename="a.png")
    text = uploaded_file(owner, b"t" * 777, contentType="text/plain", filename="t.txt")
    assert owner.post(f"/v1/files/{photo['id']}/copy", {}).status_code == 201

    def thumbnail_ready() -> Any:
        variants = owner.get(f"/v1/files/{photo['id']}/variants").json()["data"]
        return variants and all(v["status"] == "ready" for v in variants) and variants

    [thumb] = wait_for(thumbnail_ready, what="the thumbnail")
    assert owner.delete(f"/v1/files/{text['id']}").status_code == 200

    usage = owner.get("/v1/usage").json()["data"]["storage"]
    stored, objects = listed_bytes(owner.project.id)
    assert usage["bytes"] == stored == len(png_bytes()) + 777 + thumb["size"]
    assert objects == 3 and usage["files"] == 2  # the photo and its copy; the text is trashed

    File.objects.filter(id=text["id"]).update(deleted_at=timezone.now() - timedelta(days=30))
    purge_deleted_files.delay()
    wait_for(lambda: listed_bytes(owner.project.id)[1] == 2, what="the purge")

    after = owner.get("/v1/usage").json()["data"]["storage"]
    assert after["bytes"] == listed_bytes(owner.project.id)[0] == stored - 777
    # Nothing pending: the quota counts what the store holds. The worker's fold keeps it so.
    assert held_bytes(tenant=owner.tenant) == after["bytes"]
    tenant_rows = UsageDelta.objects.filter(project_id=owner.project.id, mode=owner.tenant.mode)
    assert tenant_rows.count() > 1
    fold_usage.delay()
    wait_for(lambda: tenant_rows.count() == 1, what="the fold")
    assert owner.get("/v1/usage").json()["data"]["storage"] == after
    assert held_bytes(tenant=owner.tenant) == after["bytes"]
    assert usage_recount(fix=False) == []
