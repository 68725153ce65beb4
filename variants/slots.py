"""Per-project transform slots, counted in Redis across every worker.

A project may have SERVICE_VARIANT_PROJECT_CONCURRENCY transforms running at once. A slot is
a member of the project's sorted set, scored by when it expires: a worker killed mid-transform
(its ``finally`` never runs) leaves a slot that lapses after the hard time limit, so a crash
never shrinks a project's share for good. Acquiring is one Lua script (trim the lapsed, count,
add), atomic in Redis, on Redis' own clock.

Redis not answering does not stop image work: the slot is then not counted (fail open), and
the transform runs as it would without the cap.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings

from storage_service.redis_keys import redis_key

logger = logging.getLogger(__name__)

# Beyond the hard time limit, before a slot whose worker died lapses.
SLOT_MARGIN_SECONDS = 30
# KEYS[1]: the project's slot set. ARGV: member, seconds until it lapses, the cap.
_ACQUIRE = """
local now = tonumber(redis.call('TIME')[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
"""


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


@lru_cache(maxsize=1)
def _acquire_script() -> Any:
    return _redis().register_script(_ACQUIRE)


def _key(project_id: int) -> str:
    return redis_key(f"variant-slots:{project_id}")


def acquire(project_id: int, member: str) -> bool:
    """Take one of the project's slots for ``member`` (the variant id); False when all are
    taken. Taking a slot the member already holds succeeds (a redelivered message)."""
    lapse = settings.SERVICE_VARIANT_TIME_LIMIT_SECONDS + SLOT_MARGIN_SECONDS
    cap = settings.SERVICE_VARIANT_PROJECT_CONCURRENCY
    try:
        return bool(_acquire_script()(keys=[_key(project_id)], args=[member, lapse, cap]))
    except redis.RedisError as exc:
        logger.warning("transform slots not counted: Redis unavailable (%s)", type(exc).__name__)
        return True


def release(project_id: int, member: str) -> None:
    try:
        _redis().zrem(_key(project_id), member)
    except redis.RedisError as exc:
        # The slot lapses by itself after the hard time limit.
        logger.warning("transform slot not released: Redis unavailable (%s)", type(exc).__name__)


@contextmanager
def slot(project_id: int, member: str) -> Iterator[bool]:
    """``with slot(project, variant) as held:`` -- released on the way out if it was taken."""
    held = acquire(project_id, member)
    try:
        yield held
    finally:
        if held:
            release(project_id, member)


def defer_seconds(retries: int) -> float:
    """How long a transform waits before asking again for its project's slot: doubling from
    one second up to SERVICE_VARIANT_DEFER_MAX_SECONDS, with jitter so a burst's messages do
    not all come back at once."""
    ceiling = min(float(settings.SERVICE_VARIANT_DEFER_MAX_SECONDS), 2.0 ** min(retries, 10))
    return ceiling * random.uniform(0.5, 1.0)  # spreading load, not a secret
