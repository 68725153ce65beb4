"""Staff see each project's bandwidth per day, and the variants, in the admin (read-only)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from accounts.models import BandwidthUsage
from accounts.services import bandwidth_record
from tests.factories import Actor
from tests.helpers import uploaded_file
from tests.variants.images import encode, stripes


def staff_client() -> Client:
    user = User.objects.create_superuser("staff", "staff@example.test", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_bandwidth_usage_is_listed_and_read_only(owner: Actor) -> None:
    bandwidth_record(tenant=owner.tenant, size=1234)
    bandwidth_record(tenant=owner.tenant, size=766)
    client = staff_client()
    page = client.get("/admin/accounts/bandwidthusage/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "2000" in body and owner.project.name in body
    usage = BandwidthUsage.objects.get(project=owner.project)
    assert (usage.bytes, usage.downloads) == (2000, 2)
    assert client.get("/admin/accounts/bandwidthusage/add/").status_code == 403


def test_variants_are_listed_in_the_admin(owner: Actor) -> None:
    uploaded_file(owner, encode(stripes(), "PNG"))
    page = staff_client().get("/admin/variants/variant/")
    assert page.status_code == 200
    assert "w256_h256_inside_webp_q80" in page.content.decode()
