"""What an app above ``events`` writes with every event, in the transaction that records it.

The outbox's promise is that an event and everything it sets in motion commit together. The
app that reacts to events (webhooks: a delivery per subscribed endpoint) sits above this one
and is never imported by it, so it hands over its part at start-up, in its
``AppConfig.ready``, with ``register``. Recording an event (events/services.py) then finds the
follower's subscribers in the statement that inserts the event and, when there are any, has
the follower write its rows in the same transaction.

At most one follower is registered: the statements are written once, with its SQL in them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Follower:
    """Whom an event concerns, the rows written for them, their after-commit step, and their
    retention.

    ``subscribers`` is an SQL expression, an array of the ids the follower writes rows for
    (webhooks: the subscribed endpoints), with the positional parameters: the project's id,
    the mode and the event's type, in that order. Recording selects it in the statement that
    inserts the event (or reads a batch's events' data), so an event that concerns nobody
    costs one round trip. When it is not empty, ``write`` receives the cursor, the events'
    ids, those subscribers and the time now, writes its rows (ids made by new_id, as every
    id is) by a statement of its own and returns their ids.

    One event (``event_record``): ``one_after_commit`` receives those ids once the
    transaction commits. Many events (``events_record_rows``): ``rows_after_commit``
    receives the project's id after commit.

    Retention: ``retention_delete`` deletes the rows of the events ``%(ids)s`` that may go
    (its row count is reported), and ``retention_keeps`` is a condition over the event ``e``
    that keeps it (a row of its that stays).
    """

    subscribers: str
    write: Callable[[Any, Sequence[str], Sequence[str], datetime], list[str]]
    one_after_commit: Callable[[list[str]], None]
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
