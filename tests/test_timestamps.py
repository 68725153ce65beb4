"""Timestamps read back from PostgreSQL exactly as written: aware, in UTC, to the microsecond,
through the compiled loader each connection gets (storage_service/dbtypes.py)."""

from __future__ import annotations

import datetime

import psycopg
from django.db import connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader  # type: ignore[import-untyped]

from storage_service.dbtypes import use_compiled_timestamptz

TIMESTAMPTZ = psycopg.adapters.types["timestamptz"].oid


def test_timestamptz_reads_back_exactly_in_utc(db: None) -> None:
    written = [
        datetime.datetime(2026, 11, 25, 15, 4, 5, 123456, tzinfo=datetime.UTC),
        datetime.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC),
        # Written in another zone: read back as the same instant, in UTC.
        datetime.datetime(
            2026, 3, 29, 2, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=-7))
        ),
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::timestamptz, %s::timestamptz, %s::timestamptz", written)
        read = cursor.fetchone()
    assert list(read) == written
    assert all(value.tzinfo is datetime.UTC for value in read)
    assert read[2].hour == 9 and read[2].minute == 30


def test_a_session_outside_utc_keeps_djangos_loader(db: None) -> None:
    """In another zone the compiled loader would answer in that zone: such a connection keeps
    the loader Django registered."""
    connection.ensure_connection()
    pg = connection.connection
    registered = pg.adapters.get_loader(TIMESTAMPTZ, psycopg.pq.Format.TEXT)

    class DjangosLoader(BaseTzLoader):
        timezone = datetime.UTC

    pg.adapters.register_loader("timestamptz", DjangosLoader)
    with connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Europe/Paris'")
    try:
        use_compiled_timestamptz(sender=None, connection=connection)
        assert pg.adapters.get_loader(TIMESTAMPTZ, psycopg.pq.Format.TEXT) is DjangosLoader
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET TIME ZONE 'UTC'")
        pg.adapters.register_loader("timestamptz", registered)
