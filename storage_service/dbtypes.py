"""How each Django connection reads ``timestamptz``: with psycopg's compiled loader.

Django registers psycopg's pure-Python timestamptz loader on every connection, subclassed to
pin the result's tzinfo, and the compiled loader cannot be subclassed. Every timestamp read
then costs about 3 microseconds of Python: three a file, so a page of 100 files spends a
millisecond on them. The connection's session time zone is UTC (Django sets it when
``USE_TZ`` is on and the database's ``TIME_ZONE`` is unset), and in UTC the compiled loader
returns the same values (aware, ``datetime.timezone.utc``, microseconds kept) in a tenth of
the time. So each new connection in UTC gets it, registered under a class that carries the
``timezone`` attribute Django compares before it would register its own on a cursor.
"""

from __future__ import annotations

import datetime
from typing import Any, cast

from psycopg import adapters
from psycopg.abc import AdaptContext
from psycopg.adapt import Loader
from psycopg.pq import Format

_OID = adapters.types["timestamptz"].oid
# The best loader psycopg has for the type: the compiled one when psycopg's C implementation
# is installed (psycopg-binary, in the runtime lock), else the Python one.
_FASTEST = cast("type[Loader]", adapters.get_loader(_OID, Format.TEXT))  # never None


class UtcTimestamptzLoader(Loader):
    """Stands for psycopg's compiled loader: instantiating it gives one. ``timezone`` is what
    Django's ``create_cursor`` checks against the connection's before overriding it."""

    timezone = datetime.UTC

    def __new__(cls, oid: int, context: AdaptContext | None = None) -> Any:
        return _FASTEST(oid, context)


def use_compiled_timestamptz(sender: Any, connection: Any, **kwargs: Any) -> None:
    """``connection_created`` receiver: on a PostgreSQL connection whose session time zone is
    UTC, read timestamptz with the compiled loader."""
    if connection.vendor != "postgresql" or connection.timezone is not datetime.UTC:
        return
    pg = connection.connection
    if pg.info.parameter_status("TimeZone") != "UTC":
        return  # the compiled loader would answer in the session's zone: keep Django's
    pg.adapters.register_loader("timestamptz", UtcTimestamptzLoader)
