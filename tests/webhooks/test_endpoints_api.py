"""Registering, reading and removing webhook endpoints; their delivery log's errors."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from events.models import Event
from events.services import event_record
from tests.factories import Actor, make_actor
from tests.helpers import at_once, error_code
from webhooks.models import Delivery, Endpoint

URL = "https://hooks.example.com/storage"
MISSING_WH = "wh_00000000000000000000000000"
MISSING_DL = "dl_00000000000000000000000000"


def register(actor: Actor, **body: object) -> dict:
    response = actor.post("/v1/webhooks", {"url": URL, **body})
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def test_registration_returns_the_endpoint_and_its_secret_once(owner: Actor) -> None:
    created = register(owner, events=["file.uploaded", "file.created"])
    webhook = created["webhook"]

    assert created["secret"].startswith("whsec_") and len(created["secret"]) > 40
    assert webhook["id"].startswith("wh_")
    assert webhook["url"] == URL
    assert webhook["events"] == ["file.created", "file.uploaded"]
    assert webhook["status"] == "ACTIVE"
    assert webhook["createdAt"].endswith("Z")
    assert set(webhook) == {
        "id",
        "url",
        "events",
        "status",
        "disabledAt",
        "disabledReason",
        "previousSecretExpiresAt",
        "createdAt",
    }
    assert webhook["disabledAt"] is None and webhook["disabledReason"] is None
    assert webhook["previousSecretExpiresAt"] is None


def test_the_secret_never_appears_in_list_or_get(owner: Actor) -> None:
    created = register(owner)
    secret = created["secret"]

    listed = owner.get("/v1/webhooks")
    got = owner.get(f"/v1/webhooks/{created['webhook']['id']}")

    assert listed.status_code == 200 and got.status_code == 200
    assert listed.json() == {"data": [created["webhook"]]}
    assert got.json() == {"data": created["webhook"]}
    assert secret not in listed.content.decode() and secret not in got.content.decode()
    assert "secret" not in got.content.decode()


def test_events_omitted_means_every_event_type(owner: Actor) -> None:
    webhook = register(owner)["webhook"]
    assert webhook["events"] == list(Event.Type.values)


def test_list_is_newest_first_and_delete_unregisters(owner: Actor) -> None:
    first = register(owner)["webhook"]
    second = register(owner)["webhook"]
    assert [w["id"] for w in owner.get("/v1/webhooks").json()["data"]] == [
        second["id"],
        first["id"],
    ]

    deleted = owner.delete(f"/v1/webhooks/{first['id']}")

    assert deleted.status_code == 200
    assert deleted.json() == {"data": {"id": first["id"], "deleted": True}}
    assert [w["id"] for w in owner.get("/v1/webhooks").json()["data"]] == [second["id"]]
    again = owner.delete(f"/v1/webhooks/{first['id']}")
    assert again.status_code == 404 and error_code(again) == "WEBHOOK_NOT_FOUND"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": URL, "events": ["file.exploded"]}, "events"),
        ({"url": URL, "events": ["file.uploaded", "nope"]}, "events"),
        ({"url": URL, "events": []}, "events"),
        ({"url": URL, "events": "file.uploaded"}, "events"),
        ({"url": URL, "events": [1]}, "events"),
        ({"url": "ftp://hooks.example.com/x"}, "url"),
        ({"url": "file:///etc/passwd"}, "url"),
        ({"url": "javascript:alert(1)"}, "url"),
        ({"url": "hooks.example.com/x"}, "url"),
        ({"url": "https://user:pass@hooks.example.com/x"}, "url"),
        ({"url": "https://user@hooks.example.com/x"}, "url"),
        ({"url": "https://hooks.example.com/" + "a" * 2030}, "url"),
        ({"url": "https://"}, "url"),
        ({"url": "https://hooks.example.com:99999/"}, "url"),
        ({"url": "https://hooks.example.com/a b"}, "url"),
        ({"url": 42}, "url"),
        ({"url": None}, "url"),
        ({}, "url"),
        ({"url": URL, "secret": "whsec_mine"}, "secret"),
    ],
)
def test_invalid_registrations_are_validation_errors(owner: Actor, body: dict, field: str) -> None:
    response = owner.post("/v1/webhooks", body)

    assert response.status_code == 400, response.json()
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]
    assert not Endpoint.objects.exists()


def test_a_url_of_exactly_2048_characters_is_accepted(owner: Actor) -> None:
    url = "https://hooks.example.com/" + "a" * (2048 - len("https://hooks.example.com/"))
    assert len(url) == 2048
    assert owner.post("/v1/webhooks", {"url": url}).status_code == 201
    too_long = owner.post("/v1/webhooks", {"url": url + "a"})
    assert too_long.status_code == 400 and error_code(too_long) == "VALIDATION_ERROR"


def test_the_21st_endpoint_is_refused(owner: Actor, sibling: Actor) -> None:
    for _ in range(20):
        register(owner)

    refused = owner.post("/v1/webhooks", {"url": URL})

    assert refused.status_code == 403
    assert error_code(refused) == "WEBHOOK_LIMIT_REACHED"
    assert Endpoint.objects.filter(project=owner.project).count() == 20
    # The limit is per project.
    assert sibling.post("/v1/webhooks", {"url": URL}).status_code == 201


@pytest.mark.django_db(transaction=True)
def test_racing_registrations_never_pass_the_limit() -> None:
    owner = make_actor("racer")
    for _ in range(19):
        register(owner)
    statuses = at_once(*[lambda: owner.post("/v1/webhooks", {"url": URL}).status_code] * 6)

    assert sorted(statuses) == [201, 403, 403, 403, 403, 403]
    assert Endpoint.objects.filter(project=owner.project).count() == 20


def test_another_projects_endpoint_is_missing(owner: Actor, outsider: Actor) -> None:
    webhook = register(owner)["webhook"]
    for url in (
        f"/v1/webhooks/{webhook['id']}",
        f"/v1/webhooks/{webhook['id']}/deliveries",
    ):
        theirs, missing = outsider.get(url), outsider.get(url.replace(webhook["id"], MISSING_WH))
        assert theirs.status_code == missing.status_code == 404
        assert theirs.json() == missing.json()
        assert error_code(theirs) == "WEBHOOK_NOT_FOUND"
    deleted = outsider.delete(f"/v1/webhooks/{webhook['id']}")
    assert deleted.status_code == 404 and error_code(deleted) == "WEBHOOK_NOT_FOUND"
    assert outsider.get("/v1/webhooks").json() == {"data": []}
    assert Endpoint.objects.filter(id=webhook["id"]).exists()


def test_malformed_ids_are_404s(owner: Actor) -> None:
    for url in ("/v1/webhooks/nope", "/v1/webhooks/file_00000000000000000000000000"):
        response = owner.get(url)
        assert response.status_code == 404 and error_code(response) == "WEBHOOK_NOT_FOUND"


def _event_with_delivery(actor: Actor, webhook_id: str) -> Delivery:
    with transaction.atomic():
        event = event_record(tenant=actor.tenant, type="file.created", data={"fileId": "x"})
    return Delivery.objects.get(event=event, endpoint_id=webhook_id)


def test_redeliver_errors(owner: Actor, outsider: Actor) -> None:
    webhook = register(owner)["webhook"]
    other = register(owner)["webhook"]
    delivery = _event_with_delivery(owner, webhook["id"])
    base = f"/v1/webhooks/{webhook['id']}/deliveries"

    missing = owner.post(f"{base}/{MISSING_DL}/redeliver")
    assert missing.status_code == 404 and error_code(missing) == "DELIVERY_NOT_FOUND"
    malformed = owner.post(f"{base}/nope/redeliver")
    assert malformed.status_code == 404 and error_code(malformed) == "DELIVERY_NOT_FOUND"
    # A delivery of another endpoint of the same project: not this endpoint's.
    wrong = owner.post(f"/v1/webhooks/{other['id']}/deliveries/{delivery.id}/redeliver")
    assert wrong.status_code == 404 and error_code(wrong) == "DELIVERY_NOT_FOUND"
    no_webhook = owner.post(f"/v1/webhooks/{MISSING_WH}/deliveries/{delivery.id}/redeliver")
    assert no_webhook.status_code == 404 and error_code(no_webhook) == "WEBHOOK_NOT_FOUND"
    foreign = outsider.post(f"{base}/{delivery.id}/redeliver")
    assert foreign.status_code == 404 and error_code(foreign) == "WEBHOOK_NOT_FOUND"
    body = owner.post(f"{base}/{delivery.id}/redeliver", {"now": True})
    assert body.status_code == 400 and error_code(body) == "VALIDATION_ERROR"

    Delivery.objects.filter(id=delivery.id).update(status="DELIVERED")
    done = owner.post(f"{base}/{delivery.id}/redeliver")
    assert done.status_code == 409 and error_code(done) == "DELIVERY_ALREADY_DELIVERED"


def test_redeliver_requeues_a_failed_delivery(owner: Actor) -> None:
    webhook = register(owner)["webhook"]
    delivery = _event_with_delivery(owner, webhook["id"])
    Delivery.objects.filter(id=delivery.id).update(
        status="FAILED", attempts=5, next_attempt_at=None, response_status=500
    )

    response = owner.post(f"/v1/webhooks/{webhook['id']}/deliveries/{delivery.id}/redeliver")

    assert response.status_code == 202
    data = response.json()["data"]
    assert data["id"] == delivery.id and data["status"] == "PENDING"
    assert data["nextAttemptAt"] is not None and data["attempts"] == 5


def test_delivery_list_fields_order_and_paging(owner: Actor) -> None:
    webhook = register(owner)["webhook"]
    deliveries = [_event_with_delivery(owner, webhook["id"]) for _ in range(3)]
    base = f"/v1/webhooks/{webhook['id']}/deliveries"

    first = owner.get(base, {"limit": 2})

    assert first.status_code == 200
    page = first.json()
    assert [d["id"] for d in page["data"]] == [deliveries[2].id, deliveries[1].id]
    item = page["data"][0]
    assert item == {
        "id": deliveries[2].id,
        "webhookId": webhook["id"],
        "eventId": deliveries[2].event_id,
        "status": "PENDING",
        "attempts": 0,
        "responseStatus": None,
        "lastError": None,
        "deliveredAt": None,
        "nextAttemptAt": item["nextAttemptAt"],
        "createdAt": item["createdAt"],
        "event": {"type": "file.created", "createdAt": item["event"]["createdAt"]},
    }
    assert page["pagination"]["hasMore"] is True
    second = owner.get(base, {"limit": 2, "cursor": page["pagination"]["nextCursor"]}).json()
    assert [d["id"] for d in second["data"]] == [deliveries[0].id]
    assert second["pagination"] == {"hasMore": False, "nextCursor": None}
    assert len(owner.get(base).json()["data"]) == 3


@pytest.mark.parametrize(
    "query", [{"limit": 0}, {"limit": 101}, {"limit": "x"}, {"cursor": "tampered"}]
)
def test_delivery_list_bad_queries(owner: Actor, query: dict) -> None:
    webhook = register(owner)["webhook"]
    response = owner.get(f"/v1/webhooks/{webhook['id']}/deliveries", query)
    assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"


def test_the_delivery_log_costs_the_same_whatever_its_length(owner: Actor) -> None:
    webhook = register(owner)["webhook"]
    base = f"/v1/webhooks/{webhook['id']}/deliveries"
    _event_with_delivery(owner, webhook["id"])
    with CaptureQueriesContext(connection) as one:
        assert len(owner.get(base).json()["data"]) == 1
    for _ in range(5):
        _event_with_delivery(owner, webhook["id"])
    with CaptureQueriesContext(connection) as six:
        assert len(owner.get(base).json()["data"]) == 6
    assert len(six) == len(one)
