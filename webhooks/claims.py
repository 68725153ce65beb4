"""Claiming deliveries: lease the due rows and read, joined, all that sending them needs.

One ``UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED)`` leases the due rows and returns
everything the requests need (url, secrets, event). A row another worker holds, a row not due,
or one already DELIVERED/FAILED is skipped, so a message sent twice, a sweep racing a message,
or any number of workers send each attempt once. An attempt in flight keeps its lease for the
timeout and a margin; only a worker that died mid-attempt lets a lease run out, and then the
sweep sends the delivery again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection

from events.models import Event

LEASE_MARGIN_SECONDS = 60


@dataclass(frozen=True)
class Claimed:
    id: str
    endpoint_id: str
    project_id: str
    attempts: int
    url: str
    secret: str
    # The secret a rotation replaced, while its overlap lasts: it signs beside ``secret``.
    previous_secret: str | None
    event_id: str
    event_type: str
    event_created_at: datetime
    event_data: Any
    claimed_at: datetime

    def event(self) -> Event:
        """The event of this row (read in the claim's join), for events.envelope."""
        data = self.event_data
        if isinstance(data, str | bytes):  # Django's psycopg backend hands jsonb over as text
            data = json.loads(data)
        return Event(
            id=self.event_id, type=self.event_type, created_at=self.event_created_at, data=data
        )


# A condition of every claiming and recording statement: an uncorrelated subquery, which
# PostgreSQL evaluates once, before the statement's first row, so the statement's own
# transaction commits without waiting for the WAL flush (see ``write_unflushed``). It is
# always true: ``set_config`` returns the value it set.
UNFLUSHED = "(SELECT set_config('synchronous_commit', 'off', true)) = 'off'"

# The replaced secret only until its overlap ends, by the database's clock (which every
# due time here uses too).
_CLAIM_COLUMNS = """
    d.id, e.id, e.project_id, d.attempts, e.url, e.secret,
    CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret END,
    ev.id, ev.type, ev.created_at, ev.data, now()
"""

_CLAIM_BY_ID = f"""
WITH due AS (
    SELECT id FROM webhooks_delivery
    WHERE id = ANY(%(ids)s) AND status = 'PENDING' AND next_attempt_at <= now()
      AND (leased_until IS NULL OR leased_until <= now())
    FOR UPDATE SKIP LOCKED
)
UPDATE webhooks_delivery AS d SET leased_until = now() + %(lease)s * interval '1 second'
FROM due, webhooks_endpoint AS e, webhooks_event AS ev
WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id AND {UNFLUSHED}
RETURNING {_CLAIM_COLUMNS}
"""

# Overdue deliveries (a lost message, a backlog waiting its turn), at most ``per_project`` of
# each project per page, the oldest first, then the next turn of every project: a project
# with 100,000 waiting takes its share of a page, never the page. Each endpoint's oldest
# are read through delivery_endpoint_due (a few index entries per endpoint, whatever the
# backlog); the rows read beyond a project's share are only locked until this commits.
_CLAIM_OVERDUE = f"""
WITH candidates AS (
    SELECT d.id, e.project_id, d.next_attempt_at FROM webhooks_endpoint AS e
    CROSS JOIN LATERAL (
        SELECT id, next_attempt_at FROM webhooks_delivery
        WHERE endpoint_id = e.id AND status = 'PENDING'
          AND next_attempt_at <= now() - %(grace)s * interval '1 second'
          AND (leased_until IS NULL OR leased_until <= now())
        ORDER BY next_attempt_at
        LIMIT %(per_project)s
        FOR UPDATE SKIP LOCKED
    ) AS d
), due AS (
    SELECT id FROM (
        SELECT id, next_attempt_at,
            row_number() OVER (PARTITION BY project_id ORDER BY next_attempt_at) AS turn
        FROM candidates
    ) AS c
    WHERE turn <= %(per_project)s
    ORDER BY turn, next_attempt_at
    LIMIT %(limit)s
)
UPDATE webhooks_delivery AS d SET leased_until = now() + %(lease)s * interval '1 second'
FROM due, webhooks_endpoint AS e, webhooks_event AS ev
WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id AND {UNFLUSHED}
RETURNING {_CLAIM_COLUMNS}
"""

# One project's due deliveries, the oldest first, at most %(n)s (a step of its drain): each
# of its endpoints' oldest through delivery_endpoint_due, so a backlog of 100,000 costs a
# step n index entries per endpoint, not a scan.
_CLAIM_PROJECT_DUE = f"""
WITH due AS (
    SELECT d.id FROM webhooks_endpoint AS e
    CROSS JOIN LATERAL (
        SELECT id, next_attempt_at FROM webhooks_delivery
        WHERE endpoint_id = e.id AND status = 'PENDING' AND next_attempt_at <= now()
          AND (leased_until IS NULL OR leased_until <= now())
        ORDER BY next_attempt_at
        LIMIT %(n)s
        FOR UPDATE SKIP LOCKED
    ) AS d
    WHERE e.project_id = %(project)s
    ORDER BY d.next_attempt_at
    LIMIT %(n)s
)
UPDATE webhooks_delivery AS d SET leased_until = now() + %(lease)s * interval '1 second'
FROM due, webhooks_endpoint AS e, webhooks_event AS ev
WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id AND {UNFLUSHED}
RETURNING {_CLAIM_COLUMNS}
"""

_PROJECT_HAS_DUE = """
SELECT EXISTS (
    SELECT 1 FROM webhooks_endpoint AS e JOIN webhooks_delivery AS d ON d.endpoint_id = e.id
    WHERE e.project_id = %(project)s AND d.status = 'PENDING' AND d.next_attempt_at <= now()
      AND (d.leased_until IS NULL OR d.leased_until <= now())
)
"""


def write_unflushed(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Run one claiming or recording statement, holding ``UNFLUSHED``, as a transaction of
    its own: one round trip, committed without waiting for the WAL flush.

    Delivery is at least once already: if the database crashed within the fraction of a
    second before the flush, a lost lease or outcome only means the attempt is made again.
    In exchange, no worker thread waits for a disk flush twice per batch. PostgreSQL applies
    the ``synchronous_commit`` in effect when a transaction commits, and ``set_config(...,
    true)`` holds to the end of the transaction: the statement's own in autocommit mode, a
    caller's when it runs inside one (which then commits unflushed too).
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [tuple(row) for row in cursor.fetchall()]


def _claim(sql: str, params: dict[str, Any]) -> list[Claimed]:
    lease = int(settings.SERVICE_WEBHOOK_TIMEOUT_SECONDS) + LEASE_MARGIN_SECONDS
    return [Claimed(*row) for row in write_unflushed(sql, {**params, "lease": lease})]


def claim_by_id(ids: Sequence[str]) -> list[Claimed]:
    return _claim(_CLAIM_BY_ID, {"ids": list(ids)})


def claim_overdue(limit: int) -> list[Claimed]:
    grace = int(settings.SERVICE_WEBHOOK_SWEEP_GRACE_SECONDS)
    return _claim(
        _CLAIM_OVERDUE, {"grace": grace, "limit": limit, "per_project": drain_step_size()}
    )


def drain_step_size() -> int:
    """Rows a project's drain claims per step: its sending slots and as many waiting, so its
    slots stay busy while the next step is claimed, and none of a step is deferred."""
    return 2 * int(settings.SERVICE_WEBHOOK_PROJECT_CONCURRENCY)


def claim_project_due(project_id: str) -> list[Claimed]:
    return _claim(_CLAIM_PROJECT_DUE, {"project": project_id, "n": drain_step_size()})


def project_has_due(project_id: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_PROJECT_HAS_DUE, {"project": project_id})
        return bool(cursor.fetchone()[0])
