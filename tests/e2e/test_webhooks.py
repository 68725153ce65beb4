"""Webhooks end to end: API changes, a real Celery worker, real HTTP to a real receiver.

The suite's settings set the retry delays to 300, 600 and 900 ms (storage_service/settings/
test.py) so a delivery's whole life fits in a test; the timeout stays the contract's 10 s.
"""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta
from itertools import pairwise
from unittest import mock

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from events.models import Event
from tests.factories import Actor, make_actor
from tests.helpers import register_webhook, uploaded_file
from tests.webhook_receiver import Answer, Receiver, verify_signature
from webhooks.models import Delivery
from webhooks.tasks import sweep_due_deliveries

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DELAYS = [ms / 1000 for ms in settings.SERVICE_WEBHOOK_RETRY_DELAYS_MS]


def deliveries(actor: Actor, webhook_id: str) -> list[dict]:
    response = actor.get(f"/v1/webhooks/{webhook_id}/deliveries", {"limit": 100})
    assert response.status_code == 200
    return list(response.json()["data"])


def wait_for_delivery(actor: Actor, webhook_id: str, status: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = deliveries(actor, webhook_id)
        if found and found[0]["status"] == status:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no {status} delivery in time: {deliveries(actor, webhook_id)}")


def test_signed_events_of_a_real_upload_reach_the_receiver(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    owner = make_actor("hooked")
    webhook_id, secret = register_webhook(owner, receiver.url("/all"))

    file = uploaded_file(owner)

    arrived = receiver.wait_for("/all", 2)
    by_type = {r.json()["type"]: r for r in arrived}
    assert set(by_type) == {"file.created", "file.uploaded"}
    uploaded = by_type["file.uploaded"]
    # The receiver's checks: the signature over "t.body" under the secret, a fresh timestamp.
    assert verify_signature(secret, uploaded.headers["SERVICE-Signature"], uploaded.body)
    assert not verify_signature("whsec_wrong", uploaded.headers["SERVICE-Signature"], uploaded.body)
    assert uploaded.headers["Content-Type"] == "application/json"
    assert uploaded.headers["User-Agent"] == "SERVICE-Webhooks/1.0"
    envelope = uploaded.json()
    event = Event.objects.get(id=envelope["id"])
    assert set(envelope) == {"id", "type", "created_at", "data"}
    assert envelope["id"].startswith("evt_") and envelope["created_at"].endswith("Z")
    assert envelope["data"]["projectId"] == owner.project.id
    assert envelope["data"]["organizationId"] == owner.project.organization_id
    assert envelope["data"]["fileId"] == file["id"]
    assert envelope["data"]["size"] == file["size"] and isinstance(envelope["data"]["size"], int)
    assert envelope["data"] == event.data

    done = wait_for_delivery(owner, webhook_id, "DELIVERED")
    log = deliveries(owner, webhook_id)
    assert len(log) == 2 and all(d["status"] == "DELIVERED" for d in log)
    assert done["attempts"] == 1 and done["responseStatus"] == 200
    assert done["lastError"] is None and done["deliveredAt"] is not None
    assert done["nextAttemptAt"] is None
    assert {d["eventId"] for d in log} == {r.json()["id"] for r in arrived}


def test_each_endpoint_gets_only_what_it_subscribed_to(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    owner = make_actor("filtered")
    register_webhook(owner, receiver.url("/uploaded"), ["file.uploaded"])
    register_webhook(owner, receiver.url("/deleted"), ["file.deleted", "upload.aborted"])
    register_webhook(owner, receiver.url("/all"))
    other = make_actor("unrelated")
    register_webhook(other, receiver.url("/other"))

    file = uploaded_file(owner)
    assert owner.delete(f"/v1/files/{file['id']}").status_code == 200

    assert [r.json()["type"] for r in receiver.wait_for("/uploaded", 1)] == ["file.uploaded"]
    assert [r.json()["type"] for r in receiver.wait_for("/deleted", 1)] == ["file.deleted"]
    all_types = sorted(r.json()["type"] for r in receiver.wait_for("/all", 3))
    assert all_types == ["file.created", "file.deleted", "file.uploaded"]
    time.sleep(0.5)  # nothing more arrives: no duplicate, nothing for the other project
    assert len(receiver.at("/uploaded")) == 1 and len(receiver.at("/all")) == 3
    assert receiver.at("/other") == []


def sessions_ended() -> int:
    """Sessions of the test database that have ended, as PostgreSQL counts them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def test_the_worker_keeps_its_database_connections_from_task_to_task(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    """Celery closes a task's connections when it ends; the webhook worker's pool keeps them
    open, so 20 tasks (one an event) end no PostgreSQL session, where each would end one."""
    owner = make_actor("pooled")
    webhook_id, _ = register_webhook(owner, receiver.url("/pooled"))
    before = sessions_ended()
    for _ in range(10):
        uploaded_file(owner)  # file.created, then file.uploaded: a task each
        time.sleep(0.05)
    receiver.wait_for("/pooled", 20)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if all(d["status"] == "DELIVERED" for d in deliveries(owner, webhook_id)):
            break
        time.sleep(0.1)
    time.sleep(0.5)  # a session's end is counted once its backend has exited
    assert sessions_ended() - before <= 2


def test_a_receiver_that_fails_once_gets_the_same_event_again(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    owner = make_actor("flaky")
    receiver.script("/flaky", Answer(500))
    webhook_id, secret = register_webhook(owner, receiver.url("/flaky"), ["file.created"])

    uploaded_file(owner)

    first, second = receiver.wait_for("/flaky", 2)
    assert first.json()["id"] == second.json()["id"]
    assert first.body == second.body  # same event, same envelope, signed anew
    assert verify_signature(secret, second.headers["SERVICE-Signature"], second.body)
    assert second.at - first.at >= DELAYS[0]
    done = wait_for_delivery(owner, webhook_id, "DELIVERED")
    assert done["attempts"] == 2 and done["responseStatus"] == 200 and done["lastError"] is None


def test_a_receiver_that_always_fails_gets_every_retry_then_redelivery(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    owner = make_actor("down")
    receiver.script("/down", *[Answer(503)] * (len(DELAYS) + 1))
    webhook_id, _ = register_webhook(owner, receiver.url("/down"), ["file.created"])

    uploaded_file(owner)

    failed = wait_for_delivery(owner, webhook_id, "FAILED")
    arrived = receiver.at("/down")
    assert len(arrived) == len(DELAYS) + 1 == failed["attempts"]
    assert len({r.json()["id"] for r in arrived}) == 1
    gaps = [later.at - earlier.at for earlier, later in pairwise(arrived)]
    for gap, delay in zip(gaps, DELAYS, strict=True):
        assert delay - 0.05 <= gap <= delay + 1.5, (gaps, DELAYS)
    assert failed["responseStatus"] == 503 and failed["lastError"] == "HTTP 503."
    assert failed["nextAttemptAt"] is None and failed["deliveredAt"] is None

    # The receiver is fixed; a redelivery sends the same event once more, at once.
    redeliver = owner.post(f"/v1/webhooks/{webhook_id}/deliveries/{failed['id']}/redeliver")
    assert redeliver.status_code == 202
    assert redeliver.json()["data"]["status"] == "PENDING"
    again = receiver.wait_for("/down", len(DELAYS) + 2)[-1]
    assert again.json()["id"] == failed["eventId"]
    done = wait_for_delivery(owner, webhook_id, "DELIVERED")
    assert done["id"] == failed["id"] and done["attempts"] == len(DELAYS) + 2


def test_a_receiver_slower_than_the_timeout_is_a_failed_attempt(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    timeout = settings.SERVICE_WEBHOOK_TIMEOUT_SECONDS
    assert timeout == 10  # the contract's limit, not a shortened one
    owner = make_actor("slow")
    receiver.script("/slow", Answer(200, delay=timeout + 1))
    webhook_id, _ = register_webhook(owner, receiver.url("/slow"), ["file.created"])

    uploaded_file(owner)

    # A 200 after 11 s is not a success: the attempt fails and the retry is sent.
    first, second = receiver.wait_for("/slow", 2, timeout=timeout + 15)
    assert first.json()["id"] == second.json()["id"]
    assert second.at - first.at >= timeout + DELAYS[0] - 0.1
    done = wait_for_delivery(owner, webhook_id, "DELIVERED")
    assert done["attempts"] == 2


def test_a_lost_message_is_sent_by_the_sweep(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    owner = make_actor("lost")
    webhook_id, _ = register_webhook(owner, receiver.url("/lost"), ["file.created"])

    # Redis (or the message) is lost: enqueueing raises, the API still answers.
    with mock.patch("webhooks.services.app.send_task", side_effect=ConnectionError):
        uploaded_file(owner)
    time.sleep(1.0)
    assert receiver.at("/lost") == []
    pending = Delivery.objects.get(endpoint_id=webhook_id)
    assert pending.status == "PENDING" and pending.attempts == 0
    # Overdue by more than the sweep's grace, as it is once the beat comes around.
    Delivery.objects.filter(id=pending.id).update(
        next_attempt_at=timezone.now() - timedelta(minutes=1)
    )

    sweep_due_deliveries.delay()

    arrived = receiver.wait_for("/lost", 1)
    assert arrived[0].json()["id"] == pending.event_id
    assert wait_for_delivery(owner, webhook_id, "DELIVERED")["attempts"] == 1
