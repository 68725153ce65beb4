"""Every change of the events app: recording events with their change, scrubbing, retention.

What an event brings with it (webhooks' deliveries) is written in the same statement, by the
SQL its app registered (events/outbox.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.tenancy import Tenant
from events import outbox
from events.models import Event
from storage_service.ids import first_id_at, id_parts_sql, new_id, new_id_spelled_sql

EVENT_TYPES: tuple[str, ...] = tuple(Event.Type.values)


# Every API change that records an event pays for this, so it is one round trip: the event
# row and, in the same statement, the follower's rows (webhooks: a delivery per subscribed
# endpoint). The foreign keys are deferred (Django's), so those rows may point at the event
# inserted beside them.
# ``{change}`` is where a caller's own data-modifying CTEs go (event_record_with_change):
# the change, its event and its follower's rows are then one statement, so one transaction,
# and ``{returning}`` what the caller reads back from its CTEs (e.g. a sequence-made id).
_RECORD_SQL = """
WITH {change}event AS (
    INSERT INTO webhooks_event (id, project_id, mode, type, data, created_at)
    VALUES (%s, %s, %s, %s, %s::jsonb, %s)
){follower}
SELECT {result}{returning}
"""


@lru_cache(maxsize=64)
def _record_sql(ctes: str, returning: tuple[str, ...], follower: outbox.Follower | None) -> str:
    """The statement with a change's CTEs: its text depends only on the change's shape, of
    which each caller has a few, so each is written once."""
    return _RECORD_SQL.format(
        change=ctes,
        follower=follower.one_ctes if follower is not None else "",
        result=follower.one_result if follower is not None else "NULL",
        returning="".join(f", {expression}" for expression in returning),
    )


@dataclass(frozen=True)
class ChangeSql:
    """A change written in the same statement as its event.

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
    recorded, _ = _record(tenant=tenant, type=type, data=data, at=at, change=None)
    event = Event(
        id=recorded.id,
        **tenant.owner(),
        type=type,
        data=recorded.payload,
        created_at=recorded.created_at,
    )
    event._state.adding, event._state.db = False, recorded.db_alias
    return event


def event_record_with_change(
    *, tenant: Tenant, type: str, data: dict[str, Any], change: ChangeSql
) -> tuple[Any, ...]:
    """As event_record, with the change itself in the same statement: a single
    statement is atomic on its own, so the change, its event and its deliveries commit (or
    vanish) together with no surrounding transaction, in one round trip instead of BEGIN,
    one per statement, and COMMIT. Inside an atomic block it is simply part of it.

    Returns the values of ``change.returning``; no Event instance is built (a model
    instance costs a noticeable share of an upload start), since its callers need none."""
    return _record(tenant=tenant, type=type, data=data, at=None, change=change)[1]


class _Recorded(NamedTuple):
    """What an event row was written with."""

    id: str
    payload: dict[str, Any]
    created_at: datetime
    db_alias: str


def _record(
    *,
    tenant: Tenant,
    type: str,
    data: dict[str, Any],
    at: datetime | None,
    change: ChangeSql | None,
) -> tuple[_Recorded, tuple[Any, ...]]:
    project = tenant.project
    payload = {"projectId": project.id, "organizationId": project.organization_id, **data}
    now = timezone.now()
    event_id, created_at = new_id("evt"), at or now
    follower = outbox.follower()
    # Looked up once: every read through the ``connection`` proxy looks the connection up.
    db = transaction.get_connection()
    sql = _record_sql(
        change.ctes if change is not None else "",
        change.returning if change is not None else (),
        follower,
    )
    params = [
        *(change.params if change is not None else ()),
        event_id,
        project.id,
        tenant.mode,
        type,
        json.dumps(payload),
        created_at,
    ]
    if follower is not None:
        params += [event_id, now, project.id, tenant.mode, type]
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        result, *returned = cursor.fetchone()
    if follower is not None and result:
        # Outside an atomic block (a change statement, committed by now) this runs at once.
        after_commit = follower.one_after_commit
        transaction.on_commit(lambda: after_commit(result))
    return _Recorded(event_id, payload, created_at, db.alias), tuple(returned)


# --- Many events in one statement (a job's batch) ----------------------------------------

# event_record's statement for one event per row of the caller's CTE ``{rows}``: each
# event's id made by the database as new_id makes them, its data the caller's jsonb
# expression over the row ``r`` after projectId and organizationId, and the follower's rows
# (a delivery per subscribed endpoint of the tenant), all with the change (``{change}``) in
# one statement. The ids are spelled by new_id_spelled_sql (half the CPU of new_id_sql's, for
# thousands of them) from numbers computed once per row in a subquery of their own: a
# volatile output (the random UUID, the clock) keeps each such subquery apart, evaluated once
# per row.
_RECORD_ROWS_SQL = """
WITH {change}event_rows AS (
    SELECT r.*, replace(gen_random_uuid()::text, '-', '') AS event_random FROM {rows} AS r
), event AS (
    INSERT INTO webhooks_event (id, project_id, mode, type, data, created_at)
    SELECT {event_id}, %s, %s, %s, %s::jsonb || ({data}), %s
    FROM (SELECT r.*, {event_id_parts} FROM event_rows AS r) AS r
    RETURNING id
){follower}
SELECT (SELECT count(*) FROM event), {result}{returning}
"""
# The same for every call: built once (each spelled id is about 1,800 characters).
_ROW_EVENT_ID_SQL = new_id_spelled_sql("evt", "r")
_ROW_EVENT_ID_PARTS_SQL = id_parts_sql("r.event_random")


def events_record_rows(
    *,
    tenant: Tenant,
    type: str,
    change: ChangeSql,
    rows: str,
    data: str,
    data_params: list[Any],
) -> tuple[int, tuple[Any, ...]]:
    """One event (and its deliveries) per row of the CTE ``rows`` that ``change`` defines, in
    one statement with the change: what event_record does for one change, for a batch of
    changes (a job's). ``data``: a jsonb expression over the row ``r`` (positional
    parameters ``data_params``), the fields each event is about. Returns the number of events
    and the values of ``change.returning``.

    The deliveries are sent by the project's drain (webhooks' ``drain_start`` after commit),
    not by a message naming them, so a job's fan-out never queues ahead of other projects."""
    project = tenant.project
    base = {"projectId": project.id, "organizationId": project.organization_id}
    now = timezone.now()
    follower = outbox.follower()
    sql = _RECORD_ROWS_SQL.format(
        change=change.ctes,
        rows=rows,
        event_id=_ROW_EVENT_ID_SQL,
        event_id_parts=_ROW_EVENT_ID_PARTS_SQL,
        data=data,
        follower=follower.rows_ctes if follower is not None else "",
        result=follower.rows_result if follower is not None else "0",
        returning="".join(f", {expression}" for expression in change.returning),
    )
    params = [
        *change.params,
        project.id,
        tenant.mode,
        type,
        json.dumps(base),
        *data_params,
        now,
    ]
    if follower is not None:
        params += [now, project.id, tenant.mode, type]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        count, followed, *returned = cursor.fetchone()
    if follower is not None and followed:
        project_id, after_commit = project.id, follower.rows_after_commit
        transaction.on_commit(lambda: after_commit(project_id))
    return int(count), tuple(returned)


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
