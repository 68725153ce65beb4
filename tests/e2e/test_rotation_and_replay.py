"""Secret rotation and replay end to end: a real Celery worker, real HTTP to a real receiver
that verifies as Stripe's SDK and our Python client do."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
import stripe
from django.utils import timezone
from storage_client.webhooks import SignatureError, verify

from accounts.tenancy import Tenant
from events.models import Event
from storage_service.ids import new_id
from tests.factories import make_actor
from tests.helpers import register_webhook, uploaded_file
from tests.webhook_receiver import Answer, Receiver, signatures
from webhooks.models import Delivery, Endpoint

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def stripe_accepts(body: bytes, header: str, secret: str) -> bool:
    try:
        stripe.WebhookSignature.verify_header(body.decode(), header, secret, tolerance=300)
    except stripe.SignatureVerificationError:
        return False
    return True


def client_accepts(body: bytes, header: str, *secrets: str) -> bool:
    try:
        verify(body, header, list(secrets))
    except SignatureError:
        return False
    return True


def iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_during_an_overlap_both_secrets_verify_and_after_it_only_the_new_one(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    owner = make_actor("rotating")
    webhook_id, old = register_webhook(owner, receiver.url("/hook"), ["file.created"])
    rotated = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret", {"overlapSeconds": 3600})
    new = rotated.json()["data"]["secret"]

    uploaded_file(owner)
    during = receiver.wait_for("/hook", 1)[0]
    header = during.headers["SERVICE-Signature"]

    assert len(signatures(header)[1]) == 2  # t=...,v1=<new>,v1=<old>
    assert stripe_accepts(during.body, header, new)
    assert stripe_accepts(during.body, header, old)
    assert not stripe_accepts(during.body, header, "whsec_someone_else")
    assert client_accepts(during.body, header, old)
    assert client_accepts(during.body, header, new, old)
    event = stripe.Webhook.construct_event(during.body.decode(), header, old)
    assert event["type"] == "file.created"

    # The overlap ends (the database's clock decides): the next delivery has one signature.
    Endpoint.objects.filter(id=webhook_id).update(
        previous_secret_expires_at=timezone.now() - timedelta(seconds=1)
    )
    uploaded_file(owner)
    after = receiver.wait_for("/hook", 2)[1]
    header = after.headers["SERVICE-Signature"]

    assert len(signatures(header)[1]) == 1
    assert stripe_accepts(after.body, header, new)
    assert not stripe_accepts(after.body, header, old)
    assert client_accepts(after.body, header, old, new)
    assert not client_accepts(after.body, header, old)


def test_retries_during_the_overlap_carry_both_signatures(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    owner = make_actor("retried")
    webhook_id, old = register_webhook(owner, receiver.url("/flaky"), ["file.created"])
    new = owner.post(f"/v1/webhooks/{webhook_id}/rotate-secret").json()["data"]["secret"]
    receiver.script("/flaky", Answer(status=500))

    uploaded_file(owner)

    first, retry = receiver.wait_for("/flaky", 2)
    assert first.json()["id"] == retry.json()["id"]
    for attempt in (first, retry):
        header = attempt.headers["SERVICE-Signature"]
        assert len(signatures(header)[1]) == 2
        assert stripe_accepts(attempt.body, header, new)
        assert stripe_accepts(attempt.body, header, old)


# Ten thousand deliveries through the real worker and receiver: a drill, in `make test-slow`
# (CI runs it on every change).
@pytest.mark.slow
def test_a_replay_of_ten_thousand_events_arrives_exactly_once_per_delivery(
    celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    owner = make_actor("replayed")
    other = make_actor("live-traffic")
    now = timezone.now()
    tenant = Tenant(project=owner.project, mode="test")
    events = [
        Event(
            id=new_id("evt"),
            **tenant.owner(),
            type="file.uploaded",
            data={"projectId": owner.project.id, "fileId": f"file_{i}", "n": i},
            created_at=now - timedelta(minutes=30) + timedelta(milliseconds=i),
        )
        for i in range(10_000)
    ]
    Event.objects.bulk_create(events, batch_size=2000)
    webhook_id, secret = register_webhook(owner, receiver.url("/replay"))
    register_webhook(other, receiver.url("/live"), ["file.created"])

    started = time.monotonic()
    response = owner.post(
        f"/v1/webhooks/{webhook_id}/replay", {"since": iso(now - timedelta(hours=1))}
    )
    assert response.status_code == 202
    assert response.json() == {"data": {"deliveries": 10_000}}

    # Another project's live deliveries arrive promptly while the replay is being sent.
    latencies = []
    for n in range(3):
        time.sleep(1)
        sent = time.time()
        uploaded_file(other)
        arrived = receiver.wait_for("/live", n + 1, timeout=30)[n]
        latencies.append(arrived.at - sent)
    assert max(latencies) < 3, latencies

    received = receiver.wait_for("/replay", 10_000, timeout=300)
    elapsed = time.monotonic() - started
    time.sleep(1)  # nothing more arrives
    received = receiver.at("/replay")
    ids = Counter(r.json()["id"] for r in received)
    assert len(received) == 10_000
    assert set(ids) == {e.id for e in events} and max(ids.values()) == 1
    assert all(
        client_accepts(r.body, r.headers["SERVICE-Signature"], secret) for r in received[:50]
    )
    deadline = time.monotonic() + 30
    while Delivery.objects.filter(endpoint_id=webhook_id, status="DELIVERED").count() < 10_000:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert Delivery.objects.filter(endpoint_id=webhook_id).count() == 10_000
    print(f"replay of 10,000 events: {elapsed:.1f} s; live latencies {latencies}")
