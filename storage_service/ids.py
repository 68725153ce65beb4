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


_CLOCK_MILLIS_SQL = "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"


def _random_bits_sql(random_hex: str) -> tuple[str, str]:
    """SQL for the two 40-bit halves of an id's random bits: the hex digits 1-10 and 19-28
    of ``random_hex`` (a version-4 UUID's, which are all random)."""
    return (
        f"('x' || substr({random_hex}, 1, 10))::bit(40)::bigint",
        f"('x' || substr({random_hex}, 19, 10))::bit(40)::bigint",
    )


def id_parts_sql(random_hex: str) -> str:
    """A select list of the three numbers an id spells (``id_millis``, ``id_high``,
    ``id_low``), from 32 random hex digits and the statement's clock, for new_id_spelled_sql:
    computed once per row in a subquery, since that spelling reads each of them 8 to 10
    times (and the clock must be read once)."""
    high, low = _random_bits_sql(random_hex)
    return f"{_CLOCK_MILLIS_SQL} AS id_millis, {high} AS id_high, {low} AS id_low"


def new_id_spelled_sql(prefix: str, row: str) -> str:
    """SQL for an id made as new_id makes them, from the columns of ``id_parts_sql`` of the
    row ``row``: each character one ``substr`` of the alphabet, with no subquery. Half the
    server's CPU of new_id_sql's (13 against 28 microseconds an id), for the statements that
    make thousands of ids (a job's batch makes an event and a delivery per file); but it is
    1,800 characters long, so the short statements psycopg caches use new_id_sql."""
    if not prefix.isalpha() or not prefix.islower():
        raise ValueError(f"not a plain prefix: {prefix!r}")
    characters = [
        f"substr('{_ALPHABET}', (({row}.{column} >> {5 * (count - 1 - k)}) & 31)::int + 1, 1)"
        for column, count in (("id_millis", 10), ("id_high", 8), ("id_low", 8))
        for k in range(count)
    ]
    return f"'{prefix}_' || " + " || ".join(characters)


def new_id_sql(prefix: str, random_hex: str, *, millis: str | None = None) -> str:
    """SQL for an id made as new_id makes them, by the database (the deliveries of an event,
    made only for the endpoints the statement finds). ``random_hex``: SQL for 32 random hex
    digits, a random UUID's (``replace(gen_random_uuid()::text, '-', '')``: the server's
    strong random source), of which the 80 bits that a version-4 UUID leaves random are taken
    (hex digits 1-10 and 19-28); ``millis``: SQL for the time, the statement's clock by
    default. The prefix must be a plain word (it is written into the SQL)."""
    if not prefix.isalpha() or not prefix.islower():
        raise ValueError(f"not a plain prefix: {prefix!r}")
    millis = millis or _CLOCK_MILLIS_SQL
    high, low = _random_bits_sql(random_hex)
    parts = [
        (f"({millis})", 10),  # 48 bits of time and two zero bits above them: 10 characters
        (high, 8),
        (low, 8),
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
