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
# lookups instead of _encode's 26 steps (an upload start makes 23 ids).
_PAIRS = [first + second for first in _ALPHABET for second in _ALPHABET]
_PAIR_SHIFTS = tuple(range(10 * (ID_BODY_LENGTH // 2 - 1), -1, -10))


def new_id(prefix: str, *, now_ms: int | None = None) -> str:
    millis = int(time.time() * 1000) if now_ms is None else now_ms
    value = (millis & ((1 << 48) - 1)) << 80 | secrets.randbits(80)
    return prefix + "_" + "".join([_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS])


def new_id_sql(prefix: str, random_hex: str, *, millis: str | None = None) -> str:
    """SQL for an id made as new_id makes them, by the database (the deliveries of an event,
    made only for the endpoints the statement finds). ``random_hex``: SQL for 32 random hex
    digits, a random UUID's (``replace(gen_random_uuid()::text, '-', '')``: the server's
    strong random source), of which the 80 bits that a version-4 UUID leaves random are taken
    (hex digits 1-10 and 19-28); ``millis``: SQL for the time, the statement's clock by
    default. The prefix must be a plain word (it is written into the SQL)."""
    if not prefix.isalpha() or not prefix.islower():
        raise ValueError(f"not a plain prefix: {prefix!r}")
    millis = millis or "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    parts = [
        (f"({millis})", 10),  # 48 bits of time and two zero bits above them: 10 characters
        (f"('x' || substr({random_hex}, 1, 10))::bit(40)::bigint", 8),
        (f"('x' || substr({random_hex}, 19, 10))::bit(40)::bigint", 8),
    ]
    # Short on purpose: psycopg re-parses a statement longer than 4,096 characters on every
    # execution (its cache's limit), and this goes into the statement of every change.
    spelled = [
        f"(SELECT string_agg(substr('{_ALPHABET}', ((v >> (5 * ({count - 1} - k))) & 31)::int"
        f" + 1, 1), '' ORDER BY k) FROM (SELECT {value} AS v) AS p,"
        f" generate_series(0, {count - 1}) AS k)"
        for value, count in parts
    ]
    return f"'{prefix}_' || " + " || ".join(spelled)


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
