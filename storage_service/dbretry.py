"""Celery options for a task sent as a message that reads or writes the database.

While PostgreSQL is away (restarting, failing over to its standby, a pooler restarting) a
task fails with OperationalError or InterfaceError. Each transition the task makes is one
transaction, so a failed attempt changed nothing and the same message can simply run again:
Celery sends it again after a growing, jittered wait, long enough to ride out a failover.
Django's Celery fixup drops the broken connection before the next task runs.

Periodic sweeps (beat) take no options: their next tick is their retry.
"""

from __future__ import annotations

from typing import Any

from django.db import InterfaceError, OperationalError

# 1, 2, 4, 8, 16, then 30 s between attempts (each jittered down), 20 attempts: about five
# minutes of outage at most before the message is given up; the sweeps (jobs_lost, overdue
# deliveries, stalled replays, stale variants) take over what a given-up message carried.
DB_RETRY: dict[str, Any] = {
    "autoretry_for": (OperationalError, InterfaceError),
    "retry_backoff": 1,
    "retry_backoff_max": 30,
    "retry_jitter": True,
    "retry_kwargs": {"max_retries": 20},
}
