"""Django's PostgreSQL backend, with a cheaper ``is_usable``.

With ``CONN_HEALTH_CHECKS`` Django asks ``is_usable`` before a request's first query reuses a
persistent connection, and the stock backend answers with ``SELECT 1``: one round trip to
PostgreSQL on every request, a third of a GET's. Here the check first looks at the socket
without blocking: between requests nothing is in flight, so a connection the server closed
(a restart, ``pg_terminate_backend``, an idle timeout) or sent anything on is readable, and
only then is ``SELECT 1`` asked. A quiet socket is one the server has not closed. A silently
dropped network path goes unnoticed by both checks until the query itself fails (which
``SELECT 1`` could only find after its own timeout).
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed:
            return False
        try:
            readable, _, _ = select.select([connection.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        if not readable:
            return True
        # Something arrived unasked: an error, a close, a notice. Ask properly.
        usable: bool = super().is_usable()
        return usable
