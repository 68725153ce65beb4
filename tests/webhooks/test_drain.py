"""Deliveries made in bulk (a job's fan-out) are sent by the project's drain, never ahead of
another project's live deliveries: the real webhook worker, real receivers.

- Project A has thousands of due deliveries made as a job's batch makes them; project B's
  one live delivery, made after them, arrives within 3 s, while A's keep arriving within
  A's caps.
- A drain sends every delivery of its backlog exactly once, then ends (a later batch starts
  a new one).
- The sweep's page takes a share of each project's overdue rows, so a project's backlog never
  fills it.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from events.models import Event
from events.services import ChangeSql, event_record, events_record_rows
from tests.factories import Actor, make_actor
from tests.webhook_receiver import Answer, Receiver
from webhooks import claims, services
from webhooks.models import Delivery, Endpoint

pytestmark = pytest.mark.django_db(transaction=True)


def bulk_events(actor: Actor, count: int) -> None:
    """``count`` file.moved events and their deliveries in one statement, committed, as a
    job's batch makes them (events_record_rows); its drain starts after commit."""
    change = ChangeSql(
        ctes="source AS (SELECT 'file_' || n AS id FROM generate_series(1, %s) AS n), ",
        params=[count],
    )
    with transaction.atomic():
        made, _ = events_record_rows(
            tenant=actor.tenant,
            type=Event.Type.FILE_MOVED,
            change=change,
            rows="source",
            data="jsonb_build_object('fileId', r.id)",
            data_params=[],
        )
    assert made == count


def test_a_live_delivery_arrives_within_3_s_behind_another_projects_thousands(
    celery_worker: Any, receiver: Receiver
) -> None:
    bulk_a = make_actor("bulk")
    live_b = make_actor("live")
    receiver.script("/b", Answer(200))
    receiver.default = Answer(200, delay=0.1)  # A's receiver is a little slow
    Endpoint.objects.create(**bulk_a.tenant.owner(), url=receiver.url("/a"), secret="whsec_a")
    Endpoint.objects.create(**live_b.tenant.owner(), url=receiver.url("/b"), secret="whsec_b")
    for _ in range(10):  # ten batches of a job, each asking for the drain
        bulk_events(bulk_a, 2_000)

    sent = time.time()
    with transaction.atomic():
        event_record(tenant=live_b.tenant, type="file.created", data={"fileId": "file_b"})
    arrived = receiver.wait_for("/b", 1, timeout=20)

    assert arrived[0].at - sent < 3.0
    # A's deliveries go on, one drain's worth at a time: far from all 20,000 yet.
    receiver.wait_for("/a", 1)
    assert len(receiver.at("/a")) < 20_000
    assert Delivery.objects.filter(endpoint__project=bulk_a.project, status="PENDING").exists()


def test_a_drain_sends_its_backlog_exactly_once_and_ends(
    celery_worker: Any, receiver: Receiver
) -> None:
    actor = make_actor("drained")
    Endpoint.objects.create(**actor.tenant.owner(), url=receiver.url("/d"), secret="whsec_d")
    bulk_events(actor, 300)
    bulk_events(actor, 200)

    arrived = receiver.wait_for("/d", 500, timeout=60)

    events = Counter(request.json()["id"] for request in arrived)
    assert len(events) == 500 and set(events.values()) == {1}
    deadline = time.monotonic() + 10
    while cache.get(f"webhooks:drain:{actor.project.id}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cache.get(f"webhooks:drain:{actor.project.id}") is None  # the chain ended
    statuses = Counter(
        Delivery.objects.filter(endpoint__project=actor.project).values_list("status", flat=True)
    )
    assert statuses == {"DELIVERED": 500}
    assert len(receiver.at("/d")) == 500  # and nothing more came after

    bulk_events(actor, 5)  # a later batch starts a new drain
    assert len(receiver.wait_for("/d", 505)) == 505


def test_the_sweeps_page_takes_a_share_of_each_projects_overdue_rows(receiver: Receiver) -> None:
    backlog = make_actor("backlog")
    other = make_actor("other")
    Endpoint.objects.create(**backlog.tenant.owner(), url=receiver.url("/x"), secret="whsec_x")
    Endpoint.objects.create(**other.tenant.owner(), url=receiver.url("/y"), secret="whsec_y")
    # Nothing is sent here but by the claim below (a worker may be running): no drain of the
    # backlog, no message for the other project's event.
    cache.add(f"webhooks:drain:{backlog.project.id}", 1)
    bulk_events(backlog, 500)
    with mock.patch.object(services, "enqueue"), transaction.atomic():
        event_record(tenant=other.tenant, type="file.created", data={"fileId": "file_y"})
    overdue = timezone.now() - timedelta(minutes=1)
    Delivery.objects.update(next_attempt_at=overdue)

    claimed = claims.claim_overdue(200)

    projects = Counter(item.project_id for item in claimed)
    assert projects == {backlog.project.id: claims.drain_step_size(), other.project.id: 1}
    cache.delete(f"webhooks:drain:{backlog.project.id}")
