"""Django's PostgreSQL backend, with a cheaper ``is_usable``.

With ``CONN_HEALTH_CHECKS`` Django asks ``is_usable`` before a request's first query reuses a
persistent connection, and the stock backend answers with ``SELECT 1``: one round trip to
PostgreSQL on every request, a third of a GET's. Here the check first looks at the socket
without blocking: between requests nothing is in flight, so a connection the server closed
(a restart, ``pg_terminate_backend``, an idle timeout) or sent anything on is readable, and
only then is ``SELECT 1`` asked. A quiet socket is one the server has not closed. A silently
dropped network path goes unnoticed by both checks until the query itself fails (which
``SELECT 1`` could only find after its own timeout).

Two more savings for the statements every request runs (issue 14):

- Timestamps are read by psycopg's C loader. Django registers its own loader, a Python
  subclass of psycopg's Python one (about 7 us per value, 60 values in a list of 20 files),
  to give every value the connection's time zone. When that zone is UTC, the C loader
  already gives exactly that (psycopg maps a session TimeZone of UTC to ``timezone.utc``,
  the tzinfo Django's loader sets), so it is used instead.
- ``prepared_cursor`` prepares statements on the server (see there).
"""

from __future__ import annotations

import select
from datetime import UTC
from typing import Any

import psycopg
from django.db.backends.postgresql import base

try:  # the C implementation (psycopg-binary or psycopg-c)
    from psycopg_binary._psycopg import (  # type: ignore[attr-defined]
        TimestamptzLoader as _CTimestamptzLoader,
    )
except ImportError:  # pragma: no cover - the pure-Python psycopg keeps Django's loader
    _CTimestamptzLoader = None


class _PreparingCursor(psycopg.Cursor[Any]):
    """psycopg's server-side-binding cursor, preparing every statement it executes."""

    def execute(
        self,
        query: Any,
        params: Any = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Any:
        return super().execute(
            query, params, prepare=True if prepare is None else prepare, binary=binary
        )


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

    def _c_utc_loader(self) -> bool:
        return self.timezone is UTC and _CTimestamptzLoader is not None

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection(conn_params)
        # psycopg prepares nothing while the threshold is None (Django's default): a count
        # no statement reaches keeps every other statement unprepared (Django's cursors bind
        # on the client, which psycopg never prepares anyway) and lets prepared_cursor ask.
        if connection.prepare_threshold is None:
            connection.prepare_threshold = 2**31
        if self._c_utc_loader():
            connection.adapters.register_loader("timestamptz", _CTimestamptzLoader)
        return connection

    def create_cursor(self, name: str | None = None) -> Any:
        # Django's own create_cursor reads ``timezone`` off the connection's loader, which
        # the C loader lacks (and, a C type, cannot be given). With the C loader in place
        # the zones agree, which is when Django would keep the connection's loader too.
        if name or not self._c_utc_loader():
            if name and self._c_utc_loader():
                return self._named_cursor(name)
            return super().create_cursor(name)
        return self.connection.cursor()

    def _named_cursor(self, name: str) -> Any:
        """Django's named (server-side) cursor, as its create_cursor makes it."""
        if self.settings_dict["OPTIONS"].get("server_side_binding") is not True:
            return base.ServerSideCursor(  # type: ignore[attr-defined]
                self.connection, name=name, scrollable=False, withhold=self.connection.autocommit
            )
        return self.connection.cursor(name, scrollable=False, withhold=self.connection.autocommit)

    def prepared_cursor(self) -> Any:
        """A cursor (Django's wrapper: the query log, ``execute_wrapper``s) whose statements
        are bound and prepared by the server: parsed and planned once per connection, then
        only executed. For the hot statements of every request (fastfetch.py), whose plans
        are the same for any values; each prepared statement lives as long as its
        connection (a session-mode pooler keeps it; a transaction-mode one would not, and
        the docs say to use session mode)."""
        self.ensure_connection()
        return self._prepare_cursor(_PreparingCursor(self.connection))  # type: ignore[attr-defined]
