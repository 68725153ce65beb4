"""The staff console previews files through delivery URLs signed with its own key: the key is
the console's (never listed, counted, picked or revoked by the API), its resolutions cost the
customer neither delivery budget nor bandwidth, and staff rotate it."""

from __future__ import annotations

import html
import re
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from accounts.bandwidth import bandwidth_fold
from accounts.models import BandwidthUsage
from delivery.console import CONSOLE_URL_SECONDS, CONSOLE_URL_STEP
from delivery.models import DeliveryKey
from tests.factories import Actor, image_bytes
from tests.helpers import error_code, uploaded_file, within_one_window
from tests.storage import get_from
from variants.models import Variant
from variants.services import variant_process

pytestmark = pytest.mark.django_db
browser = Client()
DELIVERY_SRC = re.compile(r'src="(https?://[^"]*/d/[^"]+)"')


def staff() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("ops", "ops@example.test", "pw"))
    return client


def resolve(url: str) -> Any:
    return browser.get(urlsplit(url).path)


def preview_src(client: Client, file_id: str) -> str:
    page = client.get(f"/admin/files/file/{file_id}/change/")
    assert page.status_code == 200
    found = DELIVERY_SRC.search(page.content.decode())
    assert found is not None, "no delivery URL on the page"
    return html.unescape(found.group(1))


def process_pending() -> None:
    for variant_id in Variant.objects.filter(status="pending").values_list("id", flat=True):
        variant_process(variant_id=variant_id)


def test_a_preview_is_a_delivery_url_of_the_consoles_own_key(owner: Actor) -> None:
    data = image_bytes("PNG", (30, 20))
    file = uploaded_file(owner, data, filename="a.png", contentType="image/png")
    url = preview_src(staff(), file["id"])
    key_id, file_id, options, _ = urlsplit(url).path.split("/")[2:]
    assert file_id == file["id"]
    key = DeliveryKey.objects.get(id=key_id)
    assert (key.project, key.mode, key.console, key.revoked_at) == (
        owner.project,
        "test",
        True,
        None,
    )
    # It expires soon, at a step's boundary, so pages opened within one step name one URL.
    expires = int(options.removeprefix("expires="))
    assert expires % CONSOLE_URL_STEP == 0
    assert CONSOLE_URL_SECONDS <= expires - time.time() <= CONSOLE_URL_SECONDS + CONSOLE_URL_STEP
    assert preview_src(staff_again(), file["id"]) == url
    answer = resolve(url)
    assert answer.status_code == 302
    fetched = get_from(answer["Location"])
    assert fetched.content == data and fetched.headers["Content-Type"] == "image/png"

    # The customer's API knows nothing of it.
    assert owner.get("/v1/delivery-keys").json()["data"] == []
    refused = owner.client.delete(f"/v1/delivery-keys/{key_id}")
    assert refused.status_code == 404 and error_code(refused) == "DELIVERY_KEY_NOT_FOUND"
    signed = owner.post(f"/v1/files/{file['id']}/delivery-url", {})
    assert signed.status_code == 409 and error_code(signed) == "NO_DELIVERY_KEY"
    named = owner.post(f"/v1/files/{file['id']}/delivery-url", {"deliveryKeyId": key_id})
    assert named.status_code == 404
    for _ in range(10):  # the cap counts the customer's keys only
        assert owner.post("/v1/delivery-keys", {}).status_code == 201
    assert error_code(owner.post("/v1/delivery-keys", {})) == "DELIVERY_KEY_LIMIT_REACHED"
    key.refresh_from_db()
    assert key.revoked_at is None


def staff_again() -> Client:
    client = Client()
    client.force_login(User.objects.get(username="ops"))
    return client


@override_settings(SERVICE_DELIVERY_RATE_PER_MINUTE=2)
def test_console_resolutions_cost_the_customer_no_budget_nor_bandwidth(owner: Actor) -> None:
    file = uploaded_file(owner, image_bytes("PNG"), filename="a.png", contentType="image/png")
    url = preview_src(staff(), file["id"])
    within_one_window(5)
    assert [resolve(url).status_code for _ in range(5)] == [302] * 5
    bandwidth_fold()  # redirects' bytes are counted in Redis, then folded into the rows
    assert not BandwidthUsage.objects.filter(project=owner.project).exists()
    # The customer's own URLs still have their whole budget this minute.
    owner.post("/v1/delivery-keys", {})
    theirs = owner.post(f"/v1/files/{file['id']}/delivery-url", {}).json()["url"]
    assert [resolve(theirs).status_code for _ in range(3)] == [302, 302, 429]
    bandwidth_fold()
    assert BandwidthUsage.objects.get(project=owner.project).downloads == 2


def test_staff_rotate_the_console_key(owner: Actor) -> None:
    file = uploaded_file(owner, image_bytes("PNG"), filename="a.png", contentType="image/png")
    client = staff()
    old = preview_src(client, file["id"])
    old_key = urlsplit(old).path.split("/")[2]
    response = client.post(
        "/admin/delivery/deliverykey/",
        {"action": "rotate_console", "_selected_action": [old_key]},
    )
    assert response.status_code == 302
    refused = resolve(old)
    assert refused.status_code == 403 and error_code(refused) == "INVALID_SIGNATURE"
    new = preview_src(client, file["id"])
    new_key = urlsplit(new).path.split("/")[2]
    assert new_key != old_key and resolve(new).status_code == 302
    assert DeliveryKey.objects.get(id=new_key).console
    listed = client.get("/admin/delivery/deliverykey/", {"console__exact": "1"}).content.decode()
    assert old_key in listed and new_key in listed
    # The project's page lists the customer's keys only.
    project_page = client.get(f"/admin/accounts/project/{owner.project.id}/change/?mode=test")
    assert new_key not in project_page.content.decode()


def test_the_browser_shows_ready_thumbnails_and_orders_none(owner: Actor) -> None:
    ready = uploaded_file(
        owner, image_bytes("PNG", (300, 200)), filename="r.png", contentType="image/png"
    )
    waiting = uploaded_file(
        owner, image_bytes("PNG", (300, 200)), filename="w.png", contentType="image/png"
    )
    Variant.objects.filter(file_id=waiting["id"]).update(status="failed")
    process_pending()
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    drawing = uploaded_file(owner, svg, filename="d.svg", contentType="image/svg+xml")
    variants = Variant.objects.count()
    client = staff()
    page = client.get(f"/admin/files/file/browse/{owner.project.id}/", {"mode": "test"})
    body = page.content.decode()
    sources = [html.unescape(s) for s in DELIVERY_SRC.findall(body)]
    assert len(sources) == 1 and f"/{ready['id']}/" in sources[0]
    assert "/width=256,height=256,fit=inside,format=webp,quality=80,version=1," in sources[0]
    answer = resolve(sources[0])
    assert answer.status_code == 302
    assert get_from(answer["Location"]).content[8:12] == b"WEBP"
    assert "No thumbnail yet" in body  # the waiting image's placeholder
    assert Variant.objects.count() == variants  # listing ordered no transform

    # SVG (script inside) is a download only: no preview, nothing of it rendered.
    svg_page = client.get(f"/admin/files/file/{drawing['id']}/change/").content.decode()
    assert DELIVERY_SRC.search(svg_page) is None and "<script>alert(1)" not in svg_page
    assert "offered as a download only" in svg_page and 'class="download current"' in svg_page
