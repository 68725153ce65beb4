"""Rotating an endpoint's signing secret and replaying its events: the API's answers, its
bounds and tenancy, and the rows they leave (the sending is end to end in tests/e2e)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from events.models import Event
from events.services import event_record
from tests.factories import Actor
from tests.helpers import error_code
from webhooks import claims, replay
from webhooks.models import Delivery, Endpoint, Replay
from webhooks.services import DRAIN_TASK

URL = "https://hooks.example.com/storage"
MISSING_WH = "wh_00000000000000000000000000"


@pytest.fixture(autouse=True)
def _no_messages(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The rows are what these tests read: no Celery message leaves the test."""
    sent: list[tuple[str, Any]] = []
    monkeypatch.setattr(
        replay, "drain_start", lambda project_id: sent.append((DRAIN_TASK, [project_id]))
    )
    monkeypatch.setattr(
        replay.app, "send_task", lambda name, args, **kw: sent.append((name, list(args)))
    )
    return sent


def register(actor: Actor, **body: object) -> dict:
    response = actor.post("/v1/webhooks", {"url": URL, **body})
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record(actor: Actor, type: str = "file.uploaded", at: datetime | None = None) -> Event:
    with transaction.atomic():
        return event_record(tenant=actor.tenant, type=type, data={"fileId": "file_x"}, at=at)


# --- Rotation ---------------------------------------------------------------------------------


def test_rotation_answers_a_new_secret_once_and_keeps_the_old_one_for_the_overlap(
    owner: Actor,
) -> None:
    created = register(owner)
    webhook_id, old = created["webhook"]["id"], created["secret"]

    response = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret", {"overlapSeconds": 3600})

    assert response.status_code == 200
    data = response.json()["data"]
    assert data["secret"].startswith("whsec_") and data["secret"] != old
    assert data["webhook"]["id"] == webhook_id
    ends = datetime.fromisoformat(data["webhook"]["previousSecretExpiresAt"])
    assert abs((ends - timezone.now()).total_seconds() - 3600) < 60
    endpoint = Endpoint.objects.get(id=webhook_id)
    assert (endpoint.secret, endpoint.previous_secret) == (data["secret"], old)
    # Readable only then: no read shows either secret.
    shown = owner.get(f"/v1/webhooks/{webhook_id}").content.decode()
    assert data["secret"] not in shown and old not in shown
    assert owner.get(f"/v1/webhooks/{webhook_id}").json()["data"]["previousSecretExpiresAt"]


def test_the_default_overlap_is_a_day_and_zero_ends_it_at_once(owner: Actor) -> None:
    webhook_id = register(owner)["webhook"]["id"]

    default = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret").json()["data"]
    ends = datetime.fromisoformat(default["webhook"]["previousSecretExpiresAt"])
    assert abs((ends - timezone.now()).total_seconds() - 86400) < 60

    none = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret", {"overlapSeconds": 0})
    assert none.json()["data"]["webhook"]["previousSecretExpiresAt"] is None
    endpoint = Endpoint.objects.get(id=webhook_id)
    assert endpoint.previous_secret is None and endpoint.secret == none.json()["data"]["secret"]


def test_a_rotation_ends_the_earlier_overlap_at_most_two_secrets_sign(owner: Actor) -> None:
    created = register(owner)
    webhook_id = created["webhook"]["id"]
    second = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret").json()["data"]["secret"]
    third = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret").json()["data"]["secret"]

    endpoint = Endpoint.objects.get(id=webhook_id)
    assert (endpoint.secret, endpoint.previous_secret) == (third, second)
    assert created["secret"] not in (endpoint.secret, endpoint.previous_secret)


@pytest.mark.parametrize(
    "body",
    [
        {"overlapSeconds": -1},
        {"overlapSeconds": 604801},
        {"overlapSeconds": "60"},
        {"overlapSeconds": 1.5},
        {"overlapSeconds": None},
        {"overlap": 60},
        [1],
    ],
)
def test_a_bad_overlap_is_refused_and_changes_nothing(owner: Actor, body: Any) -> None:
    created = register(owner)
    webhook_id = created["webhook"]["id"]

    response = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret", body)

    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"
    assert Endpoint.objects.get(id=webhook_id).secret == created["secret"]


def test_the_largest_overlap_is_a_week(owner: Actor) -> None:
    webhook_id = register(owner)["webhook"]["id"]
    response = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret", {"overlapSeconds": 604800})
    assert response.status_code == 200


def test_another_tenants_endpoint_cannot_be_rotated_or_replayed(
    owner: Actor, outsider: Actor
) -> None:
    created = register(owner)
    webhook_id = created["webhook"]["id"]
    since = iso(timezone.now() - timedelta(hours=1))

    for path, body in (("rotate-secret", {}), ("replay", {"since": since})):
        foreign = outsider.post(f"/v1/webhooks/{webhook_id}/{path}", body)
        missing = outsider.post(f"/v1/webhooks/{MISSING_WH}/{path}", body)
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json() == missing.json()
        assert error_code(foreign) == "WEBHOOK_NOT_FOUND"
    assert Endpoint.objects.get(id=webhook_id).secret == created["secret"]
    assert not Replay.objects.exists()


def test_deliveries_are_signed_with_both_secrets_during_the_overlap_then_the_new_one(
    owner: Actor,
) -> None:
    webhook_id = register(owner)["webhook"]["id"]
    record(owner)
    old = Endpoint.objects.get(id=webhook_id).secret
    new = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret").json()["data"]["secret"]

    claimed = claims.claim_by_id(list(Delivery.objects.values_list("id", flat=True)))
    assert [(c.secret, c.previous_secret) for c in claimed] == [(new, old)]

    Endpoint.objects.filter(id=webhook_id).update(
        previous_secret_expires_at=timezone.now() - timedelta(seconds=1)
    )
    Delivery.objects.update(leased_until=None)
    claimed = claims.claim_by_id(list(Delivery.objects.values_list("id", flat=True)))
    assert [(c.secret, c.previous_secret) for c in claimed] == [(new, None)]


# --- Replay -----------------------------------------------------------------------------------


def test_replay_makes_a_delivery_per_matching_event_of_the_window(
    owner: Actor, sibling: Actor, _no_messages: list, django_capture_on_commit_callbacks: Any
) -> None:
    webhook_id = register(owner, events=["file.uploaded", "file.deleted"])["webhook"]["id"]
    now = timezone.now()
    before = record(owner, at=now - timedelta(hours=3))
    inside = [record(owner, at=now - timedelta(hours=2, minutes=i)) for i in range(3)]
    record(owner, "file.created", at=now - timedelta(hours=2))  # not subscribed
    record(sibling, at=now - timedelta(hours=2))  # another project's
    Delivery.objects.all().delete()  # the live deliveries those events made

    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(
            f"/v1/webhooks/{webhook_id}/replay",
            {
                "since": iso(now - timedelta(hours=2, minutes=30)),
                "until": iso(now - timedelta(hours=1)),
            },
        )

    assert response.status_code == 202
    assert response.json() == {"data": {"deliveries": 3}}
    made = Delivery.objects.filter(endpoint_id=webhook_id)
    assert sorted(made.values_list("event_id", flat=True)) == sorted(e.id for e in inside)
    assert made.filter(status="PENDING", attempts=0).count() == 3
    # Attempted at once: the project's drain is started after the commit, and sends them.
    assert _no_messages[0] == (DRAIN_TASK, [owner.project.id])
    assert before.id not in made.values_list("event_id", flat=True)


def test_a_replay_is_made_in_batches_each_once_the_last_one_was_attempted(
    owner: Actor, _no_messages: list
) -> None:
    webhook_id = register(owner)["webhook"]["id"]
    Delivery.objects.all().delete()
    now = timezone.now()
    events = [record(owner, at=now - timedelta(minutes=10, seconds=i)) for i in range(25)]
    Delivery.objects.all().delete()  # the live deliveries those events made

    with override_settings(SERVICE_WEBHOOK_REPLAY_BATCH=10, SERVICE_WEBHOOK_REPLAY_POLL_MS=10):
        response = owner.post(
            f"/v1/webhooks/{webhook_id}/replay", {"since": iso(now - timedelta(hours=1))}
        )
        assert response.json() == {"data": {"deliveries": 25}}
        assert Delivery.objects.count() == 10
        replay_id = Replay.objects.get().id

        # All ten still wait for a first attempt: the next step makes nothing yet.
        Replay.objects.update(stepped_at=timezone.now() - timedelta(seconds=1))
        assert replay.replay_continue(replay_id=replay_id).made == []
        Delivery.objects.update(attempts=1, status="DELIVERED")
        Replay.objects.update(stepped_at=timezone.now() - timedelta(seconds=1))
        assert len(replay.replay_continue(replay_id=replay_id).made) == 10
        Delivery.objects.update(attempts=1, status="DELIVERED")
        Replay.objects.update(stepped_at=timezone.now() - timedelta(seconds=1))
        last = replay.replay_continue(replay_id=replay_id)

    assert len(last.made) == 5 and not last.more
    assert sorted(Delivery.objects.values_list("event_id", flat=True)) == sorted(
        e.id for e in events
    )
    finished = Replay.objects.get()
    assert finished.finished_at is not None and finished.made == 25


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "since"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-11-22T03:55:04"}, "since"),  # no offset
        ({"since": 1700000000}, "since"),
        ({"since": "0001-01-01T00:00:00+14:00"}, "since"),
        ({"since": "@old"}, "since"),  # past the retention window
        ({"since": "@future"}, "since"),
        ({"since": "@hour", "until": "@older"}, "until"),  # until before since
        ({"since": "@hour", "until": "@hour"}, "until"),  # an empty window
        ({"since": "@hour", "until": "@future"}, "until"),
        ({"since": "@hour", "extra": 1}, "extra"),
    ],
)
def test_a_bad_window_is_refused_and_nothing_is_made(owner: Actor, body: dict, field: str) -> None:
    webhook_id = register(owner)["webhook"]["id"]
    record(owner)
    now = timezone.now()
    moments = {
        "@old": iso(now - timedelta(days=31)),
        "@future": iso(now + timedelta(hours=1)),
        "@hour": iso(now - timedelta(hours=1)),
        "@older": iso(now - timedelta(hours=2)),
    }
    sent = {key: moments.get(value, value) for key, value in body.items()}
    count = Delivery.objects.count()

    response = owner.post(f"/v1/webhooks/{webhook_id}/replay", sent)

    assert response.status_code == 400, response.json()
    assert error_code(response) == "VALIDATION_ERROR"
    assert field in response.json()["error"]["details"]
    assert Delivery.objects.count() == count and not Replay.objects.exists()


def test_a_window_without_events_makes_nothing(owner: Actor) -> None:
    webhook_id = register(owner)["webhook"]["id"]
    since = iso(timezone.now() - timedelta(days=29))
    response = owner.post(f"/v1/webhooks/{webhook_id}/replay", {"since": since})
    assert response.status_code == 202
    assert response.json() == {"data": {"deliveries": 0}}
    assert not Replay.objects.exists()


def test_a_replay_whose_messages_were_lost_is_resumed_and_never_stepped_twice(
    owner: Actor, _no_messages: list
) -> None:
    webhook_id = register(owner)["webhook"]["id"]
    now = timezone.now()
    for i in range(5):
        record(owner, at=now - timedelta(minutes=5, seconds=i))
    Delivery.objects.all().delete()
    # A poll of 10 s: a step counts as just run for 5 s, however slow a loaded machine makes
    # the lines between the replay's start and the next step (the database's clock moves).
    with override_settings(SERVICE_WEBHOOK_REPLAY_BATCH=2, SERVICE_WEBHOOK_REPLAY_POLL_MS=10_000):
        owner.post(f"/v1/webhooks/{webhook_id}/replay", {"since": iso(now - timedelta(hours=1))})
        replay_id = Replay.objects.get().id
        Delivery.objects.update(attempts=1, status="DELIVERED")

        # A step just ran (its chain of messages is alive): another one does nothing.
        assert replay.replays_stalled() == []
        assert replay.replay_continue(replay_id=replay_id) == replay.Step(made=[], more=False)

        # No step for longer than the sweep's grace: the sweep's scan finds it, and it goes on.
        Replay.objects.update(stepped_at=timezone.now() - timedelta(minutes=1))
        assert replay.replays_stalled() == [replay_id]
        assert len(replay.replay_continue(replay_id=replay_id).made) == 2
    assert Replay.objects.get().made == 4
