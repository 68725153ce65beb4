"""Operators see webhook endpoints, deliveries and events in the admin, redeliver from it,
and never see an endpoint's secret or a full API key there."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any
from unittest import mock

from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.db import transaction
from django.test import Client
from django.utils import timezone

from events.models import Event
from events.services import event_record
from tests.accounts.test_admin import staff_client
from tests.factories import Actor
from webhooks import services
from webhooks.models import Delivery, Endpoint

URL = "https://hooks.example.com/storage"


def register(actor: Actor, url: str = URL) -> tuple[str, str]:
    response = actor.post("/v1/webhooks", {"url": url})
    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    return data["webhook"]["id"], data["secret"]


def record(actor: Actor, type: str = "file.created") -> Event:
    with transaction.atomic():
        return event_record(tenant=actor.tenant, type=type, data={"fileId": "x"})


def html(client: Client, url: str, query: dict[str, Any] | None = None) -> str:
    response = client.get(url, query or {})
    assert response.status_code == 200, url
    return response.content.decode()


def test_endpoints_are_listed_searched_and_filtered(owner: Actor, sibling: Actor) -> None:
    mine, _ = register(owner, "https://mine.example.com/hook")
    theirs, _ = register(sibling, "https://theirs.example.com/hook")
    client = staff_client()
    listing = "/admin/webhooks/endpoint/"

    everything = html(client, listing)
    assert mine in everything and theirs in everything
    for query in ({"q": mine}, {"q": "mine.example"}, {"q": owner.project.id}):
        found = html(client, listing, query)
        assert mine in found and theirs not in found, query
    assert mine in html(client, listing, {"status__exact": "ACTIVE"})

    page = html(client, f"{listing}{mine}/change/")
    assert "https://mine.example.com/hook" in page and "View endpoint" in page
    assert client.get(f"{listing}add/").status_code == 403
    assert client.post(f"{listing}{mine}/change/", {"url": "https://x.test"}).status_code == 403


def test_deliveries_are_listed_searched_and_filtered(owner: Actor, sibling: Actor) -> None:
    mine, _ = register(owner)
    theirs, _ = register(sibling)
    event = record(owner, "file.uploaded")
    other = record(sibling)
    delivery = Delivery.objects.get(event=event)
    other_delivery = Delivery.objects.get(event=other)
    Delivery.objects.filter(id=delivery.id).update(
        status="FAILED",
        attempts=6,
        response_status=503,
        last_error="HTTP 503",
        next_attempt_at=None,
    )
    client = staff_client()
    listing = "/admin/webhooks/delivery/"

    everything = html(client, listing)
    assert delivery.id in everything and other_delivery.id in everything
    assert "file.uploaded" in everything and "HTTP 503" in everything and "503" in everything
    for query in ({"q": delivery.id}, {"q": event.id}, {"q": mine}, {"status__exact": "FAILED"}):
        found = html(client, listing, query)
        assert delivery.id in found and other_delivery.id not in found, query
    assert delivery.id not in html(client, listing, {"q": theirs})
    assert delivery.id not in html(client, listing, {"q": "nonsense"})

    page = html(client, f"{listing}{delivery.id}/change/")
    assert "HTTP 503" in page and event.id in page and mine in page


def test_events_are_listed_searched_filtered_with_their_deliveries(
    owner: Actor, sibling: Actor
) -> None:
    register(owner)
    uploaded = record(owner, "file.uploaded")
    created = record(sibling, "file.created")
    client = staff_client()
    listing = "/admin/events/event/"

    everything = html(client, listing)
    assert uploaded.id in everything and created.id in everything
    for query in (
        {"q": uploaded.id},
        {"q": "file.uploaded"},
        {"q": owner.project.id},
        {"type__exact": "file.uploaded"},
    ):
        found = html(client, listing, query)
        assert uploaded.id in found and created.id not in found, query

    page = html(client, f"{listing}{uploaded.id}/change/")
    delivery = Delivery.objects.get(event=uploaded)
    assert owner.project.id in page  # the event's data
    assert "Deliveries" in page and delivery.id in page  # inline, with a link to it
    assert client.get(f"{listing}add/").status_code == 403


def test_redeliver_requeues_now_through_the_service_and_refuses_a_delivered_one(
    owner: Actor, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    register(owner)
    failed = Delivery.objects.get(event=record(owner))
    delivered = Delivery.objects.get(event=record(owner))
    Delivery.objects.filter(id=failed.id).update(status="FAILED", attempts=6, next_attempt_at=None)
    Delivery.objects.filter(id=delivered.id).update(
        status="DELIVERED", attempts=1, next_attempt_at=None, delivered_at=timezone.now()
    )
    client = staff_client()

    with (
        mock.patch.object(services, "enqueue") as enqueue,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(
            "/admin/webhooks/delivery/",
            {"action": "redeliver", "_selected_action": [failed.id, delivered.id]},
        )

    assert response.status_code == 302
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    assert "Re-queued 1 delivery(ies)." in shown
    assert any(delivered.id in m and "already delivered" in m for m in shown)
    failed.refresh_from_db()
    assert failed.status == "PENDING" and failed.attempts == 6
    assert failed.next_attempt_at is not None
    assert abs(failed.next_attempt_at - timezone.now()) < timedelta(seconds=30)
    enqueue.assert_called_once_with([failed.id])  # a message now, as the API's redeliver
    delivered.refresh_from_db()
    assert delivered.status == "DELIVERED" and delivered.next_attempt_at is None


def test_no_admin_page_shows_a_webhook_secret_or_a_full_api_key(owner: Actor) -> None:
    webhook_id, secret = register(owner)
    event = record(owner)
    delivery = Delivery.objects.get(event=event)
    client = staff_client()
    pages = [
        "/admin/",
        "/admin/webhooks/endpoint/",
        f"/admin/webhooks/endpoint/?q={webhook_id}",
        f"/admin/webhooks/endpoint/{webhook_id}/change/",
        f"/admin/webhooks/endpoint/{webhook_id}/history/",
        "/admin/webhooks/delivery/",
        f"/admin/webhooks/delivery/{delivery.id}/change/",
        "/admin/events/event/",
        f"/admin/events/event/{event.id}/change/",
        "/admin/accounts/project/",
        f"/admin/accounts/project/{owner.project.id}/change/",
        "/admin/accounts/project/add/",
        "/admin/accounts/apikey/",
        "/admin/accounts/apikey/add/",
        f"/admin/accounts/apikey/{owner.key.api_key.id}/change/",
        f"/admin/accounts/organization/{owner.project.organization_id}/change/",
    ]
    for url in pages:
        body = html(client, url)
        assert secret not in body, url
        assert owner.key.raw_key not in body, url
    # The add page of an endpoint, the one form that could hold a secret, does not exist.
    assert client.get("/admin/webhooks/endpoint/add/").status_code == 403


def test_only_staff_reach_the_admin(owner: Actor) -> None:
    user = User.objects.create_user("someone", "someone@example.test", "pw")
    client = Client()
    client.force_login(user)
    for url in ("/admin/", "/admin/webhooks/delivery/", "/admin/accounts/project/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    anonymous = Client().get("/admin/webhooks/endpoint/")
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]


def test_staff_see_their_projects_but_only_superusers_act(owner: Actor) -> None:
    webhook_id, _ = register(owner)
    event = record(owner)
    delivery = Delivery.objects.get(event=event)
    Delivery.objects.filter(id=delivery.id).update(status="FAILED", next_attempt_at=None)
    file_page = f"/admin/files/file/?q={owner.project.id}"
    user = User.objects.create_user("operator", "op@example.test", "pw", is_staff=True)
    client = Client()
    client.force_login(user)  # staff, no permission granted one by one
    owner.project.staff_users.add(user)  # the project is granted to them

    index = html(client, "/admin/")
    for section in ("Webhooks", "Files", "Accounts", "Uploads", "Variants"):
        assert section in index, section
    for url in (
        "/admin/webhooks/delivery/",
        f"/admin/webhooks/delivery/{delivery.id}/change/",
        f"/admin/webhooks/endpoint/{webhook_id}/change/",
        f"/admin/events/event/{event.id}/change/",
        f"/admin/accounts/project/{owner.project.id}/change/",
        "/admin/accounts/apikey/",
        "/admin/accounts/bandwidthusage/",
        "/admin/uploads/uploadsession/",
        "/admin/variants/variant/",
        "/admin/files/storedobject/",
        file_page,
    ):
        html(client, url)
    assert 'value="redeliver"' not in html(client, "/admin/webhooks/delivery/")
    client.post(
        "/admin/webhooks/delivery/", {"action": "redeliver", "_selected_action": [delivery.id]}
    )
    delivery.refresh_from_db()
    assert delivery.status == "FAILED"  # the action is not theirs
    assert 'value="redeliver"' in html(staff_client(), "/admin/webhooks/delivery/")


def test_a_disabled_endpoint_shows_why_and_is_re_enabled_from_the_admin(owner: Actor) -> None:
    webhook_id, _ = register(owner)
    Endpoint.objects.filter(id=webhook_id).update(
        status="DISABLED",
        disabled_reason="GONE",
        disabled_at=timezone.now(),
        failing_since=timezone.now() - timedelta(hours=2),
    )
    client = staff_client()
    listing = "/admin/webhooks/endpoint/"

    assert webhook_id in html(client, listing, {"status__exact": "DISABLED"})
    page = html(client, f"{listing}{webhook_id}/change/")
    assert "Answered 410 Gone" in page and "Disabled at" in page

    response = client.post(listing, {"action": "enable", "_selected_action": [webhook_id]})

    assert response.status_code == 302
    assert "Re-enabled 1 endpoint(s)." in [str(m) for m in get_messages(response.wsgi_request)]
    endpoint = Endpoint.objects.get(id=webhook_id)
    assert endpoint.status == "ACTIVE"
    assert (endpoint.disabled_reason, endpoint.disabled_at, endpoint.failing_since) == (
        None,
        None,
        None,
    )
    assert owner.get(f"/v1/webhooks/{webhook_id}").json()["data"]["status"] == "ACTIVE"


def test_the_admin_shows_when_a_rotations_overlap_ends_and_neither_secret(owner: Actor) -> None:
    webhook_id, first = register(owner)
    rotated = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret", {"overlapSeconds": 7200})
    second = rotated.json()["data"]["secret"]
    ends = Endpoint.objects.get(id=webhook_id).previous_secret_expires_at
    assert ends is not None
    client = staff_client()

    for url in ("/admin/webhooks/endpoint/", f"/admin/webhooks/endpoint/{webhook_id}/change/"):
        body = html(client, url)
        assert ends.isoformat(timespec="seconds") in body, url
        assert first not in body and second not in body, url
