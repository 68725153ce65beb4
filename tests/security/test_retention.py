"""What the service keeps, and for how long: events and deliveries for
SERVICE_EVENT_RETENTION_DAYS, purged files as tombstones, admin sessions until they expire.
The beat tasks run on the real Celery workers."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import Project
from events import tasks
from events.models import Event
from events.services import _DELETE_EVENTS, _PAGE, events_delete_expired
from files.models import File
from files.services.sweeps import files_purge_expired
from storage_service.ids import new_id
from storage_service.tasks import clear_expired_sessions
from tests.factories import Actor
from tests.helpers import uploaded_file
from tests.helpers import wait_for as wait_until
from webhooks.models import Delivery, Endpoint
from webhooks.services import FOLLOWER

pytestmark = pytest.mark.django_db(transaction=True)


def seed(project: Project, endpoint: Endpoint, count: int, *, age_days: float, status: str) -> None:
    """``count`` events, each with one delivery, made ``age_days`` ago (ids and times alike)."""
    start = int((time.time() - age_days * 86_400) * 1000)
    millis = [start + i for i in range(count)]
    params = {
        "project": project.id,
        "endpoint": endpoint.id,
        "status": status,
        "events": [new_id("evt", now_ms=m) for m in millis],
        "deliveries": [new_id("dl", now_ms=m) for m in millis],
        "millis": millis,
    }
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH rows AS (
                SELECT * FROM unnest(%(events)s::text[], %(deliveries)s::text[],
                                     %(millis)s::bigint[]) AS t(e, d, m)
            ), events AS (
                INSERT INTO webhooks_event (id, project_id, mode, type, data, created_at)
                SELECT e, %(project)s, 'test', 'file.created', '{}'::jsonb,
                       to_timestamp(m / 1000.0)
                FROM rows
            )
            INSERT INTO webhooks_delivery (id, endpoint_id, event_id, status, attempts, created_at)
            SELECT d, %(endpoint)s, e, %(status)s, 1, to_timestamp(m / 1000.0) FROM rows
            """,
            params,
        )


@pytest.fixture
def endpoint(owner: Actor) -> Endpoint:
    return Endpoint.objects.create(
        **owner.tenant.owner(), url="https://93.184.215.14/hook", secret="whsec_x"
    )


def test_events_and_deliveries_past_retention_are_deleted_in_batches(
    owner: Actor, endpoint: Endpoint, settings: Any
) -> None:
    settings.SERVICE_RETENTION_BATCH_SIZE = 1000
    seed(owner.project, endpoint, 5500, age_days=45, status="DELIVERED")
    seed(owner.project, endpoint, 1, age_days=44, status="PENDING")  # a redeliver of an old one
    seed(owner.project, endpoint, 300, age_days=29, status="FAILED")
    kept_pending = Delivery.objects.get(status="PENDING")

    report = events_delete_expired()

    assert report.finished
    assert (report.deliveries, report.events) == (5500, 5500)
    assert len(report.batch_seconds) == 6  # pages of 1,000 events (the last one short)
    assert Delivery.objects.filter(status="DELIVERED").count() == 0
    assert Delivery.objects.filter(status="FAILED").count() == 300
    assert Delivery.objects.filter(id=kept_pending.id).exists()
    assert Event.objects.filter(id=kept_pending.event_id).exists()
    assert Event.objects.count() == 301
    # Again: nothing left to do, and nothing else touched.
    again = events_delete_expired()
    assert (again.deliveries, again.events) == (0, 0)


def test_a_run_stops_at_its_budget_and_the_next_one_goes_on(
    owner: Actor, endpoint: Endpoint, settings: Any
) -> None:
    settings.SERVICE_RETENTION_BATCH_SIZE = 100
    seed(owner.project, endpoint, 450, age_days=40, status="DELIVERED")

    first = events_delete_expired(max_batches=2)
    assert not first.finished and (first.deliveries, first.events) == (200, 200)

    rest = events_delete_expired()
    assert rest.finished and (rest.deliveries, rest.events) == (250, 250)
    assert not Event.objects.exists()


def test_each_batch_reads_only_its_own_rows_through_indexes(
    owner: Actor, endpoint: Endpoint
) -> None:
    """Why the per-batch cost stays flat at 10M rows: every page starts where the previous one
    ended, on the primary key, and its deliveries are found by their event's index
    (bench/retention.py measures the cost). At this test's size the planner may prefer to read
    the small tables whole, so it is told not to: what is checked is that an index serves
    each statement."""
    seed(owner.project, endpoint, 2000, age_days=40, status="DELIVERED")
    ids = [new_id("evt") for _ in range(5000)]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        plans = {}
        checks: list[tuple[str, str, dict[str, Any]]] = [
            ("page", _PAGE, {"after": "", "before": new_id("evt"), "n": 5000}),
            ("deliveries", FOLLOWER.retention_delete, {"ids": ids}),
            ("events", _DELETE_EVENTS.format(keeps=FOLLOWER.retention_keeps), {"ids": ids}),
        ]
        for name, sql, params in checks:
            cursor.execute(f"EXPLAIN {sql}", params)
            plans[name] = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Only Scan using webhooks_event_pkey" in plans["page"]
    assert "Sort" not in plans["page"]
    assert "Index Scan using webhooks_delivery_event_id" in plans["deliveries"]
    assert "Index Scan using webhooks_event_pkey" in plans["events"]
    assert "webhooks_delivery_event_id" in plans["events"]  # the NOT EXISTS probe
    assert not any("Seq Scan" in plan for plan in plans.values())


def test_the_beat_task_runs_the_sweep_on_the_worker(
    owner: Actor, endpoint: Endpoint, celery_worker: Any
) -> None:
    assert settings.CELERY_BEAT_SCHEDULE["sweep-old-events"]["task"] == tasks.sweep_old_events.name
    seed(owner.project, endpoint, 50, age_days=31, status="DELIVERED")
    seed(owner.project, endpoint, 5, age_days=1, status="DELIVERED")

    tasks.sweep_old_events.apply_async()

    wait_until(lambda: Event.objects.count() == 5)
    assert Delivery.objects.count() == 5


def test_a_purged_file_keeps_no_name_path_or_metadata_in_its_row_or_its_events(
    owner: Actor,
) -> None:
    created = uploaded_file(
        owner, filename="diagnosis-jane-doe.pdf", path="patients/jane", metadata={"ssn": "1"}
    )
    file_id = created["id"]
    assert owner.patch(f"/v1/files/{file_id}", {"filename": "jane-2.pdf"}).status_code == 200
    assert owner.delete(f"/v1/files/{file_id}").status_code == 200
    assert Event.objects.filter(data__fileId=file_id).count() >= 3

    report = files_purge_expired(grace_days=0)

    assert report.files == [file_id]
    row = File.objects.get(id=file_id)
    assert (row.filename, row.path, row.metadata) == ("", None, None)
    assert row.size == created["size"]  # the tombstone keeps ids and sizes
    events = list(Event.objects.filter(data__fileId=file_id))
    assert {e.type for e in events} >= {"file.created", "file.renamed", "file.purged"}
    for event in events:
        text = str(event.data)
        for secret in ("jane", "patients", "ssn", "diagnosis"):
            assert secret not in text, (event.type, event.data)
        assert event.data["fileId"] == file_id


def test_expired_admin_sessions_are_cleared_by_a_beat_task(celery_worker: Any) -> None:
    assert (
        settings.CELERY_BEAT_SCHEDULE["clear-expired-sessions"]["task"]
        == clear_expired_sessions.name
    )
    now = timezone.now()
    with transaction.atomic():
        Session.objects.create(
            session_key="expired" * 4, session_data="x", expire_date=now - timedelta(days=1)
        )
        Session.objects.create(
            session_key="current" * 4, session_data="x", expire_date=now + timedelta(days=1)
        )

    clear_expired_sessions.apply_async()

    wait_until(lambda: not Session.objects.filter(session_key="expired" * 4).exists())
    assert Session.objects.filter(session_key="current" * 4).exists()
