"""The delivery engine in-process, against a real receiver: what counts as success, what is
recorded, how retries are scheduled, and that every event type travels."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from accounts.tenancy import Tenant
from events.envelope import envelope_body
from events.models import Event
from events.services import event_record
from storage_service.ids import first_id_at, looks_like_id
from tests.factories import Actor
from tests.webhook_receiver import Answer, Receiver, verify_signature
from webhooks import claims, delivery, services
from webhooks.models import Delivery, Endpoint
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db(transaction=True)


def record(tenant: Tenant, type: str = "file.created", **data: object) -> list[str]:
    """An event, committed, with the enqueue after commit suppressed: the test sends."""
    with mock.patch.object(services, "enqueue"), transaction.atomic():
        event = event_record(tenant=tenant, type=type, data=dict(data))
    return list(Delivery.objects.filter(event=event).values_list("id", flat=True))


def make_due(ids: list[str]) -> None:
    Delivery.objects.filter(id__in=ids).update(next_attempt_at=timezone.now())


def test_every_event_type_is_carried_signed_to_its_subscriber(
    owner: Actor, receiver: Receiver
) -> None:
    registered = endpoint_create(tenant=owner.tenant, url=receiver.url("/all"), events=None)
    ids = [i for type in Event.Type.values for i in record(owner.tenant, type, n=1)]

    assert delivery.deliver(ids) == []

    arrived = receiver.at("/all")
    assert sorted(r.json()["type"] for r in arrived) == sorted(Event.Type.values)
    for request in arrived:
        assert verify_signature(
            registered.secret, request.headers["SERVICE-Signature"], request.body
        )
        assert request.json()["data"]["projectId"] == owner.project.id
        # Byte for byte the one envelope of the stored event (events/envelope.py).
        assert request.body == envelope_body(Event.objects.get(id=request.json()["id"]))
    assert set(Delivery.objects.filter(id__in=ids).values_list("status", flat=True)) == {
        "DELIVERED"
    }


def test_a_delivery_already_done_or_not_due_is_not_sent_again(
    owner: Actor, receiver: Receiver
) -> None:
    endpoint_create(tenant=owner.tenant, url=receiver.url("/once"), events=None)
    ids = record(owner.tenant)
    delivery.deliver(ids)

    assert delivery.deliver(ids) == []  # a duplicate message
    assert len(receiver.at("/once")) == 1

    receiver.script("/once", Answer(500))
    later = record(owner.tenant)
    retries = delivery.deliver(later)
    assert len(retries) == 1 and retries[0].ids == later
    assert delivery.deliver(later) == []  # the retry is not due yet: nothing sent
    assert len(receiver.at("/once")) == 2


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (Answer(500), "HTTP 500."),
        (Answer(404), "HTTP 404."),
        (Answer(302), "HTTP 302 (redirects are not followed)."),
        (Answer(100 + 99), None),  # 199: not a 2xx
    ],
)
def test_only_a_2xx_is_a_success(
    owner: Actor, receiver: Receiver, answer: Answer, error: str | None
) -> None:
    endpoint_create(tenant=owner.tenant, url=receiver.url("/code"), events=None)
    receiver.script("/code", answer)
    ids = record(owner.tenant)

    delivery.deliver(ids)

    row = Delivery.objects.get(id=ids[0])
    assert row.status == "PENDING" and row.attempts == 1
    assert row.response_status == answer.status
    assert row.delivered_at is None and row.next_attempt_at is not None
    if error is not None:
        assert row.last_error == error
    assert len(receiver.at("/code")) == 1  # a redirect's target is never requested


@pytest.mark.parametrize("status", [200, 201, 202, 204, 299])
def test_any_2xx_is_a_success(owner: Actor, receiver: Receiver, status: int) -> None:
    endpoint_create(tenant=owner.tenant, url=receiver.url("/ok"), events=None)
    receiver.script("/ok", Answer(status))
    ids = record(owner.tenant)
    delivery.deliver(ids)
    row = Delivery.objects.get(id=ids[0])
    assert (row.status, row.response_status, row.last_error) == ("DELIVERED", status, None)


@override_settings(SERVICE_WEBHOOK_RETRY_DELAYS_MS=[1000, 5000, 30000, 120000])
def test_retries_follow_the_configured_delays_then_fail(owner: Actor, receiver: Receiver) -> None:
    endpoint_create(tenant=owner.tenant, url=receiver.url("/down"), events=None)
    receiver.default = Answer(503)
    ids = record(owner.tenant)

    for delay_ms in [1000, 5000, 30000, 120000]:
        before = timezone.now()
        retries = delivery.deliver(ids)
        row = Delivery.objects.get(id=ids[0])
        assert row.status == "PENDING" and retries and retries[0].at == row.next_attempt_at
        assert row.next_attempt_at is not None
        scheduled = (row.next_attempt_at - before).total_seconds() * 1000
        assert delay_ms - 50 <= scheduled <= delay_ms + 1000
        make_due(ids)

    assert delivery.deliver(ids) == []
    row = Delivery.objects.get(id=ids[0])
    assert (row.status, row.attempts, row.next_attempt_at) == ("FAILED", 5, None)
    assert len(receiver.at("/down")) == 5


@override_settings(SERVICE_WEBHOOK_TIMEOUT_SECONDS=1)
def test_a_slow_answer_is_a_timeout(owner: Actor, receiver: Receiver) -> None:
    endpoint_create(tenant=owner.tenant, url=receiver.url("/slow"), events=None)
    receiver.script("/slow", Answer(200, delay=1.5))
    ids = record(owner.tenant)

    started = time.monotonic()
    delivery.deliver(ids)

    assert time.monotonic() - started < 1.4
    row = Delivery.objects.get(id=ids[0])
    assert row.status == "PENDING" and row.attempts == 1
    assert row.response_status is None and row.last_error == "Timed out after 1 s."


def test_a_closed_port_is_a_connection_error(owner: Actor) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint_create(tenant=owner.tenant, url=f"http://127.0.0.1:{port}/x", events=None)
    ids = record(owner.tenant)

    delivery.deliver(ids)

    row = Delivery.objects.get(id=ids[0])
    assert row.status == "PENDING" and row.response_status is None
    assert row.last_error is not None and row.last_error.startswith("Connection failed")


def test_a_redeliver_during_an_attempt_is_not_lost(owner: Actor, receiver: Receiver) -> None:
    endpoint_create(tenant=owner.tenant, url=receiver.url("/race"), events=None)
    receiver.default = Answer(500)
    ids = record(owner.tenant)
    claimed = claims.claim_by_id(ids)
    assert len(claimed) == 1
    assert claims.claim_by_id(ids) == []  # in flight: no second claim
    # The redeliver request arrives while the attempt is in flight.
    Delivery.objects.filter(id=ids[0]).update(next_attempt_at=timezone.now())

    retries = delivery.process(claimed)

    row = Delivery.objects.get(id=ids[0])
    assert row.status == "PENDING" and row.attempts == 1
    assert retries and retries[0].at <= timezone.now()  # due now, not after the backoff


def test_a_lapsed_lease_is_claimed_again_by_the_sweep(owner: Actor, receiver: Receiver) -> None:
    endpoint_create(tenant=owner.tenant, url=receiver.url("/dead"), events=None)
    ids = record(owner.tenant)
    assert len(claims.claim_by_id(ids)) == 1  # a worker claims it, then dies
    assert delivery.deliver_overdue()[0] == 0
    past = timezone.now() - timedelta(minutes=5)
    Delivery.objects.filter(id=ids[0]).update(leased_until=past, next_attempt_at=past)

    sent, _ = delivery.deliver_overdue()

    assert sent == 1 and len(receiver.at("/dead")) == 1
    assert Delivery.objects.get(id=ids[0]).status == "DELIVERED"


def test_deleting_the_endpoint_stops_its_deliveries(owner: Actor, receiver: Receiver) -> None:
    registered = endpoint_create(tenant=owner.tenant, url=receiver.url("/gone"), events=None)
    ids = record(owner.tenant)
    claimed = claims.claim_by_id(ids)
    Endpoint.objects.filter(id=registered.endpoint.id).delete()

    assert delivery.process(claimed) == []  # the attempt in flight records nothing
    assert not Delivery.objects.filter(id__in=ids).exists()


def test_an_event_rolled_back_has_no_deliveries(owner: Actor) -> None:
    endpoint_create(tenant=owner.tenant, url="http://127.0.0.1:9/x", events=None)
    with pytest.raises(RuntimeError), transaction.atomic():
        event_record(tenant=owner.tenant, type="file.created", data={})
        raise RuntimeError("the change fails")
    assert not Event.objects.exists() and not Delivery.objects.exists()


def test_enqueue_never_raises_when_the_broker_is_gone() -> None:
    with mock.patch.object(
        services.app, "send_task", side_effect=ConnectionError("down")
    ) as send_task:
        services.enqueue(["dl_x"])  # logged; the sweep sends the delivery later
    send_task.assert_called_once()


@override_settings(SERVICE_WEBHOOK_TIMEOUT_SECONDS=1)
def test_a_receiver_trickling_its_answer_is_cut_off_at_the_deadline(owner: Actor) -> None:
    """Each byte comes within the socket timeout, the whole answer does not: the attempt ends
    at the deadline instead of holding a sending thread for as long as the receiver likes."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not stop.wait(0.2):
                try:
                    conn.sendall(b"a")
                except OSError:
                    return

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        port = listener.getsockname()[1]
        endpoint_create(tenant=owner.tenant, url=f"http://127.0.0.1:{port}/x", events=None)
        ids = record(owner.tenant)

        started = time.monotonic()
        delivery.deliver(ids)

        assert time.monotonic() - started < 2.0
        row = Delivery.objects.get(id=ids[0])
        assert row.status == "PENDING" and row.last_error == "Timed out after 1 s."
    finally:
        stop.set()
        listener.close()


def test_over_its_cap_a_project_waits_in_line_then_is_deferred_without_an_attempt(
    owner: Actor, receiver: Receiver
) -> None:
    """Cap 1: one attempt at a time for the project, 4 more in line, the rest put back."""
    endpoint_create(tenant=owner.tenant, url=receiver.url("/slow"), events=None)
    receiver.default = Answer(200, delay=0.3)
    ids = [i for _ in range(8) for i in record(owner.tenant)]

    with override_settings(SERVICE_WEBHOOK_PROJECT_CONCURRENCY=1):
        retries = delivery.deliver(ids)

    rows = {row.id: row for row in Delivery.objects.filter(id__in=ids)}
    delivered = [i for i in ids if rows[i].status == "DELIVERED"]
    deferred = [i for i in ids if rows[i].status == "PENDING"]
    assert len(delivered) == 5 and len(deferred) == 3
    arrivals = sorted(r.at for r in receiver.at("/slow"))
    assert all(b - a >= 0.25 for a, b in itertools.pairwise(arrivals))  # one at a time
    for delivery_id in deferred:
        assert rows[delivery_id].attempts == 0 and rows[delivery_id].last_error is None
        assert rows[delivery_id].next_attempt_at is not None
    assert sorted(i for retry in retries for i in retry.ids) == sorted(deferred)


def test_each_delivery_gets_its_own_id(owner: Actor, receiver: Receiver) -> None:
    """One delivery per endpoint, each with its own id: distinct, well-formed, and of the
    time they were made."""
    for path in ("/a", "/b", "/c"):
        endpoint_create(tenant=owner.tenant, url=receiver.url(path), events=None)
    before = int(time.time() * 1000)
    ids = record(owner.tenant)
    after = int(time.time() * 1000)
    assert len(ids) == len(set(ids)) == 3
    for made in ids:
        assert looks_like_id(made, "dl"), made
        assert first_id_at("dl", before - 5) <= made < first_id_at("dl", after + 5), made
