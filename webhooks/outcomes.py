"""Writing outcomes: each attempt's result, the next attempt's time, the endpoints' streaks.

One ``UPDATE ... FROM unnest(...)`` writes every outcome of a batch and, for failures, the
next attempt's time from ``SERVICE_WEBHOOK_RETRY_DELAYS_MS``, or FAILED after the last. The
same transaction keeps each endpoint's failure streak and disables an endpoint that answered
410 Gone or has failed every attempt for ``SERVICE_WEBHOOK_DISABLE_AFTER_SECONDS`` (with a
``webhook_endpoint.disabled`` event). A batch whose every attempt succeeded, the usual one,
can disable nothing and schedule nothing: it is written by one statement, a transaction of
its own, one round trip. A row admitted by no sending slot is put back instead (``defer``):
due a moment later, and not an attempt.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from accounts.tenancy import Tenant
from events.models import Event
from events.services import event_record
from webhooks.claims import UNFLUSHED, write_unflushed
from webhooks.models import Endpoint

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    id: str
    ok: bool
    status: int | None
    error: str | None


@dataclass(frozen=True)
class Retry:
    ids: list[str]
    at: datetime


# Old values on the right of SET: ``d.attempts`` is the count before this attempt. A
# ``next_attempt_at`` later than the claim means a redeliver came in while the attempt was in
# flight; it is kept, so the redelivery still happens.
_RECORD = f"""
UPDATE webhooks_delivery AS d SET
    attempts = d.attempts + 1,
    response_status = v.code,
    last_error = v.error,
    leased_until = NULL,
    delivered_at = CASE WHEN v.ok THEN now() ELSE d.delivered_at END,
    status = CASE
        WHEN v.ok THEN 'DELIVERED'
        WHEN e.status = 'DISABLED' THEN 'FAILED'
        WHEN d.next_attempt_at > %(claimed)s THEN 'PENDING'
        WHEN d.attempts < cardinality(%(delays)s::int[]) THEN 'PENDING'
        ELSE 'FAILED' END,
    next_attempt_at = CASE
        WHEN v.ok THEN NULL
        WHEN e.status = 'DISABLED' THEN NULL
        WHEN d.next_attempt_at > %(claimed)s THEN d.next_attempt_at
        WHEN d.attempts < cardinality(%(delays)s::int[])
            THEN now() + (%(delays)s::int[])[d.attempts + 1] * interval '1 millisecond'
        ELSE NULL END
FROM unnest(%(ids)s::text[], %(oks)s::bool[], %(codes)s::int[], %(errors)s::text[])
    AS v(id, ok, code, error), webhooks_endpoint AS e
WHERE d.id = v.id AND e.id = d.endpoint_id AND {UNFLUSHED}
RETURNING d.id, d.status, d.next_attempt_at
"""

# Every attempt of the batch succeeded: each row DELIVERED (as _RECORD writes a success), and
# each endpoint's failure streak ended (as _STREAK does when an attempt succeeded and none
# answered 410). The endpoints are written first, as in _RECORD's transaction, so the two
# take their row locks in one order: the uncorrelated count is evaluated before the
# statement's first row, which runs the CTE to its end.
_RECORD_DELIVERED = f"""
WITH recovered AS (
    UPDATE webhooks_endpoint SET failing_since = NULL
    WHERE failing_since IS NOT NULL
      AND id IN (SELECT endpoint_id FROM webhooks_delivery WHERE id = ANY(%(ids)s))
    RETURNING id
)
UPDATE webhooks_delivery AS d SET
    attempts = d.attempts + 1,
    response_status = v.code,
    last_error = v.error,
    leased_until = NULL,
    delivered_at = now(),
    status = 'DELIVERED',
    next_attempt_at = NULL
FROM unnest(%(ids)s::text[], %(codes)s::int[], %(errors)s::text[]) AS v(id, code, error)
WHERE d.id = v.id AND {UNFLUSHED} AND (SELECT count(*) FROM recovered) >= 0
RETURNING d.id
"""

# Each endpoint's failure streak, before the outcomes are written (a delivery of an endpoint
# disabled here becomes FAILED there). Only rows that change are written: on the usual path
# (success after success) this statement writes nothing. ``now()`` is the transaction's
# start, the same in every row, which is how the RETURNING tells the endpoints disabled here.
_STREAK = """
WITH v AS (
    SELECT d.endpoint_id, bool_or(v.ok) AS any_ok, bool_or(v.code = 410) AS gone
    FROM unnest(%(ids)s::text[], %(oks)s::bool[], %(codes)s::int[]) AS v(id, ok, code)
    JOIN webhooks_delivery AS d ON d.id = v.id
    GROUP BY d.endpoint_id
), next AS (
    SELECT e.id,
        CASE WHEN v.any_ok AND NOT v.gone THEN NULL
             ELSE coalesce(e.failing_since, now()) END AS failing_since,
        coalesce(e.status = 'ACTIVE' AND (
            v.gone OR (NOT v.any_ok AND e.failing_since <= now() - %(after)s * interval '1 second')
        ), false) AS disable,
        CASE WHEN v.gone THEN 'GONE' ELSE 'FAILING' END AS reason
    FROM webhooks_endpoint AS e JOIN v ON v.endpoint_id = e.id
)
UPDATE webhooks_endpoint AS e SET
    failing_since = next.failing_since,
    status = CASE WHEN next.disable THEN 'DISABLED' ELSE e.status END,
    disabled_at = CASE WHEN next.disable THEN now() ELSE e.disabled_at END,
    disabled_reason = CASE WHEN next.disable THEN next.reason ELSE e.disabled_reason END
FROM next
WHERE e.id = next.id
  AND (next.disable OR e.failing_since IS DISTINCT FROM next.failing_since)
RETURNING e.id, next.disable
"""

# The other deliveries still waiting for an endpoint disabled just now: FAILED (they can be
# redelivered once it is re-enabled). One in flight becomes FAILED when its outcome is written.
_FAIL_WAITING = """
UPDATE webhooks_delivery SET status = 'FAILED', next_attempt_at = NULL,
    last_error = coalesce(last_error, 'The endpoint was disabled.')
WHERE endpoint_id = ANY(%(endpoints)s) AND status = 'PENDING'
  AND (leased_until IS NULL OR leased_until <= now())
"""

# A row admitted by no slot: back to waiting, due a little later; not an attempt.
_DEFER = f"""
UPDATE webhooks_delivery SET leased_until = NULL,
    next_attempt_at = greatest(next_attempt_at, now() + %(defer)s * interval '1 millisecond')
WHERE id = ANY(%(ids)s) AND status = 'PENDING' AND {UNFLUSHED}
RETURNING id, next_attempt_at
"""


def _by_due_time(rows: Sequence[tuple[str, datetime]]) -> list[Retry]:
    due: dict[datetime, list[str]] = defaultdict(list)
    for delivery_id, next_attempt_at in rows:
        due[next_attempt_at].append(delivery_id)
    return [Retry(ids=ids, at=at) for at, ids in sorted(due.items())]


def defer(ids: Sequence[str]) -> list[Retry]:
    """Put rows back, unleased and due a moment later (no attempt was made)."""
    defer_ms = int(settings.SERVICE_WEBHOOK_DEFER_MS)
    rows = write_unflushed(_DEFER, {"ids": list(ids), "defer": defer_ms})
    return _by_due_time([(row[0], row[1]) for row in rows])


def record(outcomes: Sequence[Outcome], claimed_at: datetime) -> list[Retry]:
    """Write every outcome and the endpoints' failure streaks in one transaction; disable the
    endpoints that must be; return the retries to schedule, by due time."""
    if not outcomes:
        return []
    params: dict[str, Any] = {
        "ids": [o.id for o in outcomes],
        "oks": [o.ok for o in outcomes],
        "codes": [o.status for o in outcomes],
        "errors": [o.error for o in outcomes],
        "claimed": claimed_at,
        "delays": list(settings.SERVICE_WEBHOOK_RETRY_DELAYS_MS),
        "after": int(settings.SERVICE_WEBHOOK_DISABLE_AFTER_SECONDS),
    }
    if all(outcome.ok for outcome in outcomes):
        write_unflushed(_RECORD_DELIVERED, params)
        return []
    # Committed unflushed, as _RECORD holds UNFLUSHED: at least once already (see
    # claims.write_unflushed).
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_STREAK, params)
        disabled = [endpoint_id for endpoint_id, disable in cursor.fetchall() if disable]
        cursor.execute(_RECORD, params)
        rows = cursor.fetchall()
        if disabled:
            cursor.execute(_FAIL_WAITING, {"endpoints": disabled})
            _announce_disabled(disabled)
    return _by_due_time(
        [(delivery_id, at) for delivery_id, status, at in rows if status == "PENDING" and at]
    )


def _announce_disabled(endpoint_ids: Sequence[str]) -> None:
    """A ``webhook_endpoint.disabled`` event per endpoint disabled just now (to the project's
    other endpoints: a disabled one receives nothing), in the transaction that disabled it."""
    for endpoint in Endpoint.objects.select_related("project").filter(id__in=endpoint_ids):
        logger.warning("webhook endpoint %s disabled (%s)", endpoint.id, endpoint.disabled_reason)
        event_record(
            tenant=Tenant.of(endpoint),  # to the endpoints of its own mode
            type=Event.Type.WEBHOOK_ENDPOINT_DISABLED,
            data={
                "webhookId": endpoint.id,
                "url": endpoint.url,
                "reason": endpoint.disabled_reason,
                "disabledAt": endpoint.disabled_at.isoformat() if endpoint.disabled_at else None,
            },
        )
