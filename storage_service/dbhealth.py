"""The check of a reused database connection at the start of a request, mostly without a
round trip.

With ``CONN_HEALTH_CHECKS`` Django checks a reused connection with ``SELECT 1`` before the
request's first query: a round trip on every request, only to learn whether PostgreSQL closed
the connection meanwhile (a restart, a failover, ``pg_terminate_backend``, an idle timeout).
PostgreSQL says so on the socket: it sends its last message and closes, and the idle socket
turns readable. So a socket with nothing to read is a connection as PostgreSQL left it, and
Django's check is marked done; on one with anything to read (a goodbye, or a message nobody
asked for) Django's own check runs as before. A connection that dies without a word (a lost
network) shows nothing on either side, and ``SELECT 1`` would wait on it as the query does;
Django closes it after the failed request (``close_if_unusable_or_obsolete``). Celery's tasks
keep Django's own check.
"""

from __future__ import annotations

import select
from typing import Any

from django.db import connections


def check_idle_connections(**kwargs: Any) -> None:
    """``request_started`` receiver, after Django's ``close_old_connections`` (connected when
    ``django.db`` is imported, before any app is ready), which closes connections past their
    age or left broken and resets each one's check for the new request. Run before it (as the
    test client reorders them), Django's check simply runs too."""
    for connection in connections.all(initialized_only=True):
        raw = connection.connection
        # health_check_enabled and health_check_done are the attributes Django's own check
        # (close_if_health_check_failed) reads; the stubs leave them out.
        if (
            raw is not None
            and connection.health_check_enabled  # type: ignore[attr-defined]
            and not connection.health_check_done  # type: ignore[attr-defined]
            and not raw.closed
            and _quiet(raw.fileno())
        ):
            connection.health_check_done = True  # type: ignore[attr-defined]


def _quiet(fd: int) -> bool:
    """Whether an idle connection's socket has nothing to read and is not closed."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    return not poller.poll(0)
