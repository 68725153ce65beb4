"""Public identifiers: ``<prefix>_<26 chars>``, ULID-shaped.

48 bits of millisecond time then 80 random bits, in lowercase Crockford base32: unguessable
(80 random bits), sortable by creation time, and friendly to B-tree indexes because new ids
land at the right edge of the index instead of at random pages.
"""

from __future__ import annotations

import secrets
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_BODY_LENGTH = 26


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


# Every pair of characters, by the ten bits it spells: an id's 26 characters are 13 table
# lookups instead of _encode's 26 steps. The one place ids are made: every row's id, events'
# and deliveries' included, is made here and sent to the database.
_PAIRS = [first + second for first in _ALPHABET for second in _ALPHABET]
_PAIR_SHIFTS = tuple(range(10 * (ID_BODY_LENGTH // 2 - 1), -1, -10))


def new_id(prefix: str, *, now_ms: int | None = None) -> str:
    millis = int(time.time() * 1000) if now_ms is None else now_ms
    value = (millis & ((1 << 48) - 1)) << 80 | secrets.randbits(80)
    return prefix + "_" + "".join([_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS])


def first_id_at(prefix: str, millis: int) -> str:
    """The smallest id made at ``millis``: every id made before it sorts below it (the ids'
    text order is their time order), so an id range is a creation-time range."""
    return f"{prefix}_{_encode((millis & ((1 << 48) - 1)) << 80, ID_BODY_LENGTH)}"


def looks_like_id(value: str, prefix: str) -> bool:
    """A cheap shape check, so a malformed id is a plain 404 without touching the database."""
    head, sep, body = value.partition("_")
    return (
        sep == "_"
        and head == prefix
        and len(body) == ID_BODY_LENGTH
        and all(c in _ALPHABET for c in body)
    )


def id_field_length(prefix: str) -> int:
    return len(prefix) + 1 + ID_BODY_LENGTH
