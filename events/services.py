"""Every change of the events app: recording events with their change, scrubbing, retention.

What an event brings with it (webhooks' deliveries) is written in the same transaction, by the
part its app registered (events/outbox.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.tenancy import Tenant
from events import changes, outbox
from events.models import Event
from storage_service.ids import first_id_at, new_id

EVENT_TYPES: tuple[str, ...] = tuple(Event.Type.values)


# Every API change that records an event pays for this, so it is one round trip when the
# event concerns nobody (most events): the event row, and the follower's subscribers
# (webhooks: the endpoints subscribed to the type) found in the same statement. The
# follower's rows for them are then written by a second statement (events/outbox.py).
_RECORD_SQL = """
WITH event AS (
    INSERT INTO webhooks_event (id, project_id, mode, type, data, created_at)
    VALUES (%s, %s, %s, %s, %s::jsonb, %s)
)
SELECT {subscribers}
"""


def _subscribers_sql(follower: outbox.Follower | None) -> str:
    return follower.subscribers if follower is not None else "ARRAY[]::text[]"


@dataclass(frozen=True)
class ChangeSql:
    """A change written in the same statement that reads its events' data.

    ``ctes``: data-modifying CTEs (``name AS (INSERT ...), ``, each followed by a comma and
    a space) with positional ``%s`` parameters ``params``; PostgreSQL runs each exactly once
    and to completion, whatever the rest of the statement reads. ``returning``: SQL
    expressions over those CTEs (``(SELECT id FROM name)``) whose values the caller gets back.
    """

    ctes: str
    params: list[Any]
    returning: tuple[str, ...] = ()


def event_record(
    *, tenant: Tenant, type: str, data: dict[str, Any], at: datetime | None = None
) -> Event:
    """Write an event row inside the caller's transaction (the outbox), and its deliveries.

    ``data`` always starts with ``projectId`` and ``organizationId``; the caller adds the ids
    of the resources concerned and the fields the event is about.

    1. The event row.
    2. One PENDING delivery, due now, per endpoint of the tenant (its project *and* mode)
       subscribed to the type, in the same transaction: the event and its deliveries commit
       (or vanish) together. A test-mode event never reaches a live endpoint.
    3. After commit, one message asks a worker to send them all; if it is lost, the sweep
       finds the rows due and sends them.

    (2 and 3 are webhooks' part, registered with events/outbox.py.)
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events must be recorded inside the transaction of their change")
    recorded = _record(tenant=tenant, type=type, data=data, at=at)
    event = Event(
        id=recorded.id,
        **tenant.owner(),
        type=type,
        data=recorded.payload,
        created_at=recorded.created_at,
    )
    event._state.adding, event._state.db = False, recorded.db_alias
    return event


class _Recorded(NamedTuple):
    """What an event row was written with."""

    id: str
    payload: dict[str, Any]
    created_at: datetime
    db_alias: str


def _record(*, tenant: Tenant, type: str, data: dict[str, Any], at: datetime | None) -> _Recorded:
    project = tenant.project
    payload = {"projectId": project.id, "organizationId": project.organization_id, **data}
    now = timezone.now()
    event_id, created_at = new_id("evt"), at or now
    follower = outbox.follower()
    # Looked up once: every read through the ``connection`` proxy looks the connection up.
    db = transaction.get_connection()
    params = [event_id, project.id, tenant.mode, type, json.dumps(payload), created_at]
    if follower is not None:
        params += [project.id, tenant.mode, type]
    with db.cursor() as cursor:
        cursor.execute(_RECORD_SQL.format(subscribers=_subscribers_sql(follower)), params)
        (subscribers,) = cursor.fetchone()
        written = (
            follower.write(cursor, [event_id], subscribers, now)
            if follower is not None and subscribers
            else []
        )
    if follower is not None and written:
        after_commit = follower.one_after_commit
        transaction.on_commit(lambda: after_commit(written))
    changes.announce_event_after_commit(project.id, type)
    return _Recorded(event_id, payload, created_at, db.alias)


# --- Many events in one statement (a job's batch) ----------------------------------------

# The change of a batch and, in the same statement, each event's data (a row of the caller's
# CTE ``{rows}`` as jsonb after projectId and organizationId) and the follower's subscribers:
# the events, and the follower's rows, are then inserted with ids made by new_id.
_ROWS_DATA_SQL = """
WITH {change}event_rows AS (SELECT (%s::jsonb || ({data}))::text AS data FROM {rows} AS r)
SELECT ARRAY(SELECT data FROM event_rows), {subscribers}{returning}
"""

_EVENTS_SQL = """
INSERT INTO webhooks_event (id, project_id, mode, type, data, created_at)
SELECT r.id, %s, %s, %s, r.data::jsonb, %s FROM unnest(%s::text[], %s::text[]) AS r(id, data)
"""


def events_record_rows(
    *,
    tenant: Tenant,
    type: str,
    change: ChangeSql,
    rows: str,
    data: str,
    data_params: list[Any],
) -> tuple[int, tuple[Any, ...]]:
    """One event (and its deliveries) per row of the CTE ``rows`` that ``change`` defines,
    with the change, inside the caller's transaction: what event_record does for one change,
    for a batch of changes (a job's). ``data``: a jsonb expression over the row ``r``
    (positional parameters ``data_params``), the fields each event is about. Returns the
    number of events and the values of ``change.returning``.

    The deliveries are sent by the project's drain (webhooks' ``drain_start`` after commit),
    not by a message naming them, so a job's fan-out never queues ahead of other projects."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events must be recorded inside the transaction of their change")
    project = tenant.project
    base = {"projectId": project.id, "organizationId": project.organization_id}
    now = timezone.now()
    follower = outbox.follower()
    sql = _ROWS_DATA_SQL.format(
        change=change.ctes,
        rows=rows,
        data=data,
        subscribers=_subscribers_sql(follower),
        returning="".join(f", {expression}" for expression in change.returning),
    )
    params = [*change.params, json.dumps(base), *data_params]
    if follower is not None:
        params += [project.id, tenant.mode, type]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        datas, subscribers, *returned = cursor.fetchone()
        events = [new_id("evt") for _ in datas]
        if events:
            cursor.execute(_EVENTS_SQL, [project.id, tenant.mode, type, now, events, datas])
        written = (
            follower.write(cursor, events, subscribers, now)
            if follower is not None and events and subscribers
            else []
        )
    if follower is not None and written:
        project_id, after_commit = project.id, follower.rows_after_commit
        transaction.on_commit(lambda: after_commit(project_id))
    if events:
        changes.announce_event_after_commit(project.id, type)
    return len(events), tuple(returned)


# --- Retention --------------------------------------------------------------------------------

# Event data keys that name or describe a file's content, scrubbed when the file is purged.
FILE_PERSONAL_KEYS = ("filename", "path", "previousFilename", "previousPath", "metadata")


def events_scrub_file(*, project_id: str, file_id: str) -> int:
    """Remove the file's name, path and metadata from every stored event about it (the
    purge's tombstone: ids, sizes, types and times stay). Found through the ``event_file``
    index on ``data->>'fileId'``. What was already delivered cannot be recalled."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE webhooks_event SET data = data - %(keys)s::text[]
            WHERE (data ->> 'fileId') = %(file_id)s AND project_id = %(project_id)s
              AND data ?| %(keys)s::text[]
            """,
            {"keys": list(FILE_PERSONAL_KEYS), "file_id": file_id, "project_id": project_id},
        )
        return cursor.rowcount


@dataclass
class RetentionReport:
    deliveries: int = 0  # the follower's rows deleted with the events
    events: int = 0
    # Seconds each batch (select a page of ids, delete it) took, in order: flat when the
    # sweep scales (each batch is one index range scan from where the last one ended).
    batch_seconds: list[float] = field(default_factory=list)
    finished: bool = True  # False when the run stopped at its batch budget


# A page of event ids below the boundary, after the last page: a range scan of the primary key.
_PAGE = """
SELECT id FROM webhooks_event WHERE id > %(after)s AND id < %(before)s ORDER BY id LIMIT %(n)s
"""
# The events left without the follower's rows (webhooks keeps a PENDING delivery, and with it
# its event).
_DELETE_EVENTS = """
DELETE FROM webhooks_event AS e WHERE e.id = ANY(%(ids)s) AND NOT ({keeps})
"""


def events_delete_expired(
    *, now: datetime | None = None, max_batches: int | None = None
) -> RetentionReport:
    """The retention sweep: delete events created more than ``SERVICE_EVENT_RETENTION_DAYS``
    ago, with their deliveries.

    Ids are time-ordered (storage_service/ids.py), so "created before the cutoff" is "id below
    the cutoff's first id": each batch reads the next ``SERVICE_RETENTION_BATCH_SIZE`` event
    ids of the primary key from where the previous batch ended, deletes their deliveries
    (through the delivery_event index) and then them, in one short transaction. No table
    scan, no new index, no long lock, and every batch reads only its own rows, so its cost
    does not grow with the table or with what earlier batches deleted. A run stops after
    ``SERVICE_RETENTION_MAX_BATCHES`` batches and the next run goes on. Safe to run twice and
    from several processes at once.
    """
    cutoff = (now or timezone.now()) - timedelta(days=int(settings.SERVICE_EVENT_RETENTION_DAYS))
    before = first_id_at("evt", int(cutoff.timestamp() * 1000))
    budget = int(settings.SERVICE_RETENTION_MAX_BATCHES) if max_batches is None else max_batches
    size = int(settings.SERVICE_RETENTION_BATCH_SIZE)
    follower = outbox.follower()
    delete_events = _DELETE_EVENTS.format(
        keeps=follower.retention_keeps if follower is not None else "false"
    )
    report = RetentionReport()
    after = ""
    while True:
        if len(report.batch_seconds) >= budget:
            report.finished = False
            return report
        started = time.monotonic()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_PAGE, {"after": after, "before": before, "n": size})
            ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return report
            if follower is not None:
                cursor.execute(follower.retention_delete, {"ids": ids})
                report.deliveries += cursor.rowcount
            cursor.execute(delete_events, {"ids": ids})
            report.events += cursor.rowcount
        report.batch_seconds.append(time.monotonic() - started)
        after = ids[-1]
        if len(ids) < size:
            return report
