"""What delivering costs the database: a batch whose attempts all succeed is claimed and
recorded in one statement each, and both commit without waiting for the WAL flush."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from events.services import event_record
from tests.factories import Actor
from tests.webhook_receiver import Answer, Receiver
from webhooks import claims, delivery, services
from webhooks.models import Delivery, Endpoint
from webhooks.outcomes import Outcome, record
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db(transaction=True)


def recorded_deliveries(actor: Actor) -> list[str]:
    """An event, committed, with the enqueue after commit suppressed: the test sends."""
    with mock.patch.object(services, "enqueue"), transaction.atomic():
        event = event_record(tenant=actor.tenant, type="file.created", data={})
    return list(Delivery.objects.filter(event=event).values_list("id", flat=True))


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


def test_a_batch_that_succeeds_costs_two_statements_and_ends_a_failure_streak(
    owner: Actor, receiver: Receiver
) -> None:
    endpoints = [
        endpoint_create(tenant=owner.tenant, url=receiver.url(f"/{n}"), events=None).endpoint
        for n in range(3)
    ]
    recovering = endpoints[0]
    Endpoint.objects.filter(id=recovering.id).update(
        failing_since=timezone.now() - timedelta(hours=1)
    )
    ids = recorded_deliveries(owner)

    with CaptureQueriesContext(connection) as statements:
        retries = delivery.deliver(ids)

    assert retries == []
    assert [receiver.at(f"/{n}") != [] for n in range(3)] == [True] * 3
    # The claim, and every outcome with the endpoints' streaks: no BEGIN, SET or COMMIT.
    assert len(statements) == 2, [query["sql"][:80] for query in statements.captured_queries]
    rows = Delivery.objects.filter(id__in=ids)
    assert {(row.status, row.attempts, row.response_status) for row in rows} == {
        ("DELIVERED", 1, 200)
    }
    assert all(row.delivered_at and row.leased_until is None for row in rows)
    assert Endpoint.objects.get(id=recovering.id).failing_since is None


def test_a_batch_with_a_failure_keeps_its_retry_and_the_streak(
    owner: Actor, receiver: Receiver
) -> None:
    endpoint_create(tenant=owner.tenant, url=receiver.url("/ok"), events=None)
    failing = endpoint_create(tenant=owner.tenant, url=receiver.url("/down"), events=None)
    receiver.script("/down", Answer(500))
    ids = recorded_deliveries(owner)

    retries = delivery.deliver(ids)

    down = Delivery.objects.get(id__in=ids, endpoint_id=failing.endpoint.id)
    assert [retry.ids for retry in retries] == [[down.id]]
    assert (down.status, down.attempts, down.response_status) == ("PENDING", 1, 500)
    assert Endpoint.objects.get(id=failing.endpoint.id).failing_since is not None


def test_claims_and_outcomes_commit_without_waiting_for_the_flush(
    owner: Actor, receiver: Receiver
) -> None:
    """Each statement sets it for its own transaction: seen here inside the caller's, and
    gone once that ends."""
    endpoint_create(tenant=owner.tenant, url=receiver.url("/hook"), events=None)
    ids = recorded_deliveries(owner)
    # The suite's databases default to off (tests/conftest.py): this session as a production
    # database has it, until the end of the test.
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit = on")
    try:
        with transaction.atomic():
            claimed = claims.claim_by_id(ids)
            assert synchronous_commit() == "off"
        assert len(claimed) == 1 and synchronous_commit() == "on"

        with transaction.atomic():
            record([Outcome(ids[0], True, 200, None)], claimed[0].claimed_at)
            assert synchronous_commit() == "off"
        assert synchronous_commit() == "on"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")
    assert Delivery.objects.get(id=ids[0]).status == "DELIVERED"
