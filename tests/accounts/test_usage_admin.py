"""Staff see each project's usage: bytes stored (live objects, a copy once) and bandwidth."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import BandwidthUsage
from accounts.services import bandwidth_record
from accounts.usage import project_usage
from tests.accounts.test_admin import staff_client
from tests.factories import Actor, make_actor
from tests.helpers import start_upload, uploaded_file


def test_storage_counts_stored_objects_once_and_bandwidth_totals_and_recent_days(
    owner: Actor, sibling: Actor
) -> None:
    first = uploaded_file(owner, b"abc", contentType="text/plain")
    uploaded_file(owner, b"hello", contentType="text/plain")
    copied = owner.post(f"/v1/files/{first['id']}/copy", {"filename": "copy.txt"})
    assert copied.status_code in (200, 201), copied.json()
    start_upload(owner, b"not yet uploaded", contentType="text/plain")  # pending: not stored
    uploaded_file(sibling, b"another project's", contentType="text/plain")
    bandwidth_record(tenant=owner.tenant, size=1000)
    bandwidth_record(tenant=owner.tenant, size=500)
    BandwidthUsage.objects.create(
        **owner.tenant.owner(),
        day=timezone.now().date() - timedelta(days=40),
        bytes=7000,
        downloads=3,
    )

    usage = project_usage(owner.tenant)

    # Two objects of 3 and 5 bytes: the copy shares the first one's object.
    assert (usage.storage_bytes, usage.stored_objects) == (8, 2)
    assert (usage.bandwidth_bytes, usage.downloads) == (8500, 5)
    assert (usage.recent_bandwidth_bytes, usage.recent_downloads) == (1500, 2)

    client = staff_client()
    page = client.get(f"/admin/accounts/project/{owner.project.id}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "8 bytes" in body and "in 2 object(s)" in body
    assert "8500 bytes" in body and "in 5 download(s)" in body
    assert "1500 bytes" in body and "in 2 download(s)" in body

    listing = client.get("/admin/accounts/project/", {"q": owner.project.id})
    assert listing.status_code == 200
    assert '<td class="field-recent_bandwidth">1.5\xa0KB</td>' in listing.content.decode()


def test_the_project_list_costs_the_same_queries_whatever_its_length(db: None) -> None:
    client = staff_client()

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/admin/accounts/project/").status_code == 200
        return len(captured)

    for n in range(2):
        bandwidth_record(tenant=make_actor(f"p{n}").tenant, size=10)
    few = queries()
    for n in range(2, 12):
        bandwidth_record(tenant=make_actor(f"p{n}").tenant, size=10)
    assert queries() == few
