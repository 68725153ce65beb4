"""Reading events back: ``GET /v1/events`` and ``GET /v1/events/<evt_id>``."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from events.envelope import envelope_body
from events.models import Event
from events.services import event_record
from tests.factories import Actor, key_for, make_actor
from tests.helpers import error_code

MISSING_EVT = "evt_00000000000000000000000000"


def record(actor: Actor, type: str = "file.uploaded", **data: object) -> Event:
    with transaction.atomic():
        return event_record(tenant=actor.tenant, type=type, data={"fileId": "file_x", **data})


def test_events_are_listed_newest_first_as_webhooks_receive_them(owner: Actor) -> None:
    first = record(owner, "file.created")
    second = record(owner, "file.uploaded", size=12)

    response = owner.get("/v1/events")

    assert response.status_code == 200
    body = response.json()
    assert [item["id"] for item in body["data"]] == [second.id, first.id]
    assert body["data"][0] == json.loads(envelope_body(Event.objects.get(id=second.id)))
    assert set(body["data"][0]) == {"id", "type", "created_at", "data"}
    assert body["data"][0]["data"]["projectId"] == owner.project.id
    assert body["pagination"] == {"hasMore": False, "nextCursor": None}


def test_the_type_filter_and_the_cursor_walk_every_event_once(owner: Actor) -> None:
    made = [record(owner, "file.deleted" if i % 3 == 0 else "file.uploaded") for i in range(12)]

    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, object] = {"limit": 2, "type": "file.uploaded"}
        if cursor:
            params["cursor"] = cursor
        page = owner.get("/v1/events", params).json()
        assert all(item["type"] == "file.uploaded" for item in page["data"])
        seen += [item["id"] for item in page["data"]]
        cursor = page["pagination"]["nextCursor"]
        if not page["pagination"]["hasMore"]:
            break

    wanted = [e.id for e in reversed(made) if e.type == "file.uploaded"]
    assert seen == wanted


@pytest.mark.parametrize(
    "params",
    [
        {"type": "file.nope"},
        {"limit": 0},
        {"limit": 101},
        {"limit": "x"},
        {"cursor": "not-a-cursor"},
    ],
)
def test_a_bad_query_is_a_validation_error(owner: Actor, params: dict) -> None:
    response = owner.get("/v1/events", params)
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


def test_one_event_is_the_body_its_webhooks_received_byte_for_byte(owner: Actor) -> None:
    # Text a JSON renderer may escape (U+2028) and non-ASCII: the same bytes either way.
    event = record(owner, filename="caf\u00e9\u2028\u2603.png", metadata={"b": 1, "a": [1.5]})
    stored = Event.objects.get(id=event.id)

    response = owner.get(f"/v1/events/{event.id}")

    assert response.status_code == 200
    assert response.content == b'{"data":' + envelope_body(stored) + b"}"


def test_another_tenants_event_answers_as_a_missing_one(owner: Actor, outsider: Actor) -> None:
    event = record(owner)
    live = make_actor("owner-live", environment="live")

    missing = outsider.get(f"/v1/events/{MISSING_EVT}")
    foreign = outsider.get(f"/v1/events/{event.id}")

    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert error_code(foreign) == "EVENT_NOT_FOUND"
    assert outsider.get("/v1/events").json()["data"] == []
    assert live.get("/v1/events").json()["data"] == []
    assert owner.get("/v1/events/not-an-id").status_code == 404


def test_a_key_sees_only_the_events_of_its_mode(owner: Actor) -> None:
    test_event = record(owner)
    live = APIClient()
    live.credentials(HTTP_AUTHORIZATION=f"Bearer {key_for(owner.project, 'live').raw_key}")

    assert live.get("/v1/events").json()["data"] == []
    assert live.get(f"/v1/events/{test_event.id}").status_code == 404
    assert [e["id"] for e in owner.get("/v1/events").json()["data"]] == [test_event.id]


def test_events_past_the_retention_window_are_not_shown(owner: Actor) -> None:
    kept = record(owner)
    old = record(owner)
    Event.objects.filter(id=old.id).update(created_at=timezone.now() - timedelta(days=31))

    listed = [item["id"] for item in owner.get("/v1/events").json()["data"]]

    assert listed == [kept.id]
    assert owner.get(f"/v1/events/{old.id}").status_code == 404
    with override_settings(SERVICE_EVENT_RETENTION_DAYS=40):
        assert owner.get(f"/v1/events/{old.id}").status_code == 200
