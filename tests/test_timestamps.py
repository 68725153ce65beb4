"""Timestamps read back from PostgreSQL exactly as written: aware, in UTC, to the
microsecond."""

from __future__ import annotations

import datetime

from django.db import connection


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
