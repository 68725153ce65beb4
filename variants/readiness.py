"""How a request waiting for a variant learns at once that it is done: the worker publishes on
the variant's Redis channel once its end (ready or failed) is committed, and the waiter,
subscribed to it, wakes on the message instead of polling the row.

Polling cost a SQL statement every few tens of milliseconds per waiting request and, backing
off, added on average half its last interval to every answer; a message arrives within a
millisecond of the commit. The waiter subscribes before reading the row, so an end committed
between its read and its subscription is never missed: the row already says it.

Redis not answering loses nothing but speed: the waiter then sleeps the rest of its hold
and reads the row again, and a lost message only means the same.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import lru_cache

import redis
from django.conf import settings

from storage_service.redis_keys import redis_key

logger = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


def channel(variant_id: str) -> str:
    return redis_key(f"variant-done:{variant_id}")


def announce(variant_id: str) -> None:
    """Wake whoever waits for this variant (called after the commit that ended it)."""
    try:
        _redis().publish(channel(variant_id), b"done")
    except redis.RedisError as exc:
        logger.warning("variant %s end not announced (%s)", variant_id, type(exc).__name__)


def wait_until_done(variant_id: str, is_done: Callable[[], bool], seconds: float) -> bool:
    """Block up to ``seconds`` until the variant has ended; True when ``is_done()`` (a read of
    the row) says so. ``is_done`` is called once after subscribing and once on each wake-up."""
    deadline = time.monotonic() + seconds
    try:
        subscription = _redis().pubsub(ignore_subscribe_messages=True)
    except redis.RedisError:
        subscription = None
    if subscription is None:
        return _sleep_then_check(is_done, seconds)
    try:
        subscription.subscribe(channel(variant_id))
        if is_done():
            return True
        while (left := deadline - time.monotonic()) > 0:
            if subscription.get_message(timeout=left) is not None and is_done():
                return True
        return is_done()
    except redis.RedisError as exc:
        logger.warning("waiting for variant %s without Redis (%s)", variant_id, type(exc).__name__)
        return _sleep_then_check(is_done, max(0.0, deadline - time.monotonic()))
    finally:
        subscription.close()


def _sleep_then_check(is_done: Callable[[], bool], seconds: float) -> bool:
    if is_done():
        return True
    time.sleep(seconds)
    return is_done()
