"""The one timestamp format of the API: ``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    utc = value.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def iso_required(value: datetime) -> str:
    text = iso(value)
    assert text is not None
    return text
