"""Per-project caps counted in Redis across every process: the transforms a project has
running (over all workers), and the first requests of a project waiting for their on-demand
variants (over all API processes, delivery/resolution.py).

A cap's places are members of the project's sorted set, scored by when they lapse: a process
killed while it holds one (its ``finally`` never runs) leaves a place that lapses by itself, so
a crash never shrinks a project's share for good. Taking a place is one Lua script (trim the
lapsed, count, add), atomic in Redis, on Redis' own clock.

Redis not answering does not stop the work: the place is then not counted (fail open), and
the work goes on as it would without the cap.
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
# KEYS[1]: the project's set. ARGV: member, seconds until it lapses, the cap.
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


class ProjectCap:
    """At most ``cap`` members of one project at once, each place lapsing after
    ``lapse_seconds`` unless released first; ``kind`` names the project's Redis key."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def key(self, project_id: str) -> str:
        return redis_key(f"{self.kind}:{project_id}")

    def acquire(self, project_id: str, member: str, *, cap: int, lapse_seconds: int) -> bool:
        """Take a place for ``member``; False when all ``cap`` are taken. Taking a place the
        member already holds succeeds (a redelivered message)."""
        try:
            taken = _acquire_script()(
                keys=[self.key(project_id)], args=[member, lapse_seconds, cap]
            )
        except redis.RedisError as exc:
            logger.warning("%s not counted: Redis unavailable (%s)", self.kind, type(exc).__name__)
            return True
        return bool(taken)

    def release(self, project_id: str, member: str) -> None:
        try:
            _redis().zrem(self.key(project_id), member)
        except redis.RedisError as exc:
            # The place lapses by itself.
            logger.warning("%s not released: Redis unavailable (%s)", self.kind, type(exc).__name__)

    @contextmanager
    def held(self, project_id: str, member: str, *, cap: int, lapse_seconds: int) -> Iterator[bool]:
        """``with cap.held(...) as held:`` -- released on the way out if it was taken."""
        taken = self.acquire(project_id, member, cap=cap, lapse_seconds=lapse_seconds)
        try:
            yield taken
        finally:
            if taken:
                self.release(project_id, member)


# A project's transforms running at once (SERVICE_VARIANT_PROJECT_CONCURRENCY).
TRANSFORM_SLOTS = ProjectCap("variant-slots")


@contextmanager
def slot(project_id: str, member: str) -> Iterator[bool]:
    """``with slot(project, variant) as held:`` -- one of the project's transform slots for
    the variant, released on the way out if it was taken; a slot whose worker died lapses
    after the hard time limit."""
    with TRANSFORM_SLOTS.held(
        project_id,
        member,
        cap=settings.SERVICE_VARIANT_PROJECT_CONCURRENCY,
        lapse_seconds=settings.SERVICE_VARIANT_TIME_LIMIT_SECONDS + SLOT_MARGIN_SECONDS,
    ) as held:
        yield held


def defer_seconds(retries: int) -> float:
    """How long a transform waits before asking again for its project's slot: doubling from
    one second up to SERVICE_VARIANT_DEFER_MAX_SECONDS, with jitter so a burst's messages do
    not all come back at once."""
    ceiling = min(float(settings.SERVICE_VARIANT_DEFER_MAX_SECONDS), 2.0 ** min(retries, 10))
    return ceiling * random.uniform(0.5, 1.0)  # spreading load, not a secret
