"""What an app above ``events`` writes with every event, in the statement that records it.

The outbox's promise is that an event and everything it sets in motion commit together. The
app that reacts to events (webhooks: a delivery per subscribed endpoint) sits above this one
and is never imported by it, so it hands its SQL over at start-up, in its
``AppConfig.ready``, with ``register``. Recording an event (events/services.py) then writes the
change, the event and the follower's rows in one statement, so one transaction.

At most one follower is registered: the statements are written once, with its SQL in them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Follower:
    """The rows written with each event, their after-commit step, and their retention.

    One event (``event_record``): ``one_ctes`` is a data-modifying CTE (``, name AS (...)``),
    written after the ``event`` CTE, with the positional parameters: the event's id, the
    time now, the project's id, the mode and the event's type, in that order. ``one_result``
    is an SQL expression over it, whose value ``one_after_commit`` receives once the
    transaction commits (at once outside an atomic block).

    Many events (``events_record_rows``): ``rows_ctes`` reads the ``event`` CTE (``RETURNING
    id``), with the parameters: the time now, the project's id, the mode and the type.
    ``rows_result`` is an SQL expression giving how many rows it wrote; when there are any,
    ``rows_after_commit`` receives the project's id after commit.

    Retention: ``retention_delete`` deletes the rows of the events ``%(ids)s`` that may go
    (its row count is reported), and ``retention_keeps`` is a condition over the event ``e``
    that keeps it (a row of its that stays).
    """

    one_ctes: str
    one_result: str
    one_after_commit: Callable[[Any], None]
    rows_ctes: str
    rows_result: str
    rows_after_commit: Callable[[str], None]
    retention_delete: str
    retention_keeps: str


_followers: list[Follower] = []


def register(follower: Follower) -> None:
    """Called by the follower's ``AppConfig.ready``; the same follower again changes nothing."""
    if _followers and _followers[0] != follower:
        raise RuntimeError("events has a follower already; it writes one app's rows")
    if not _followers:
        _followers.append(follower)


def follower() -> Follower | None:
    """The registered follower (None before ready(), or without one)."""
    return _followers[0] if _followers else None
