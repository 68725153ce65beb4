"""Names of the service's own Redis keys and channels (rate-limit counters, delivery budgets,
bandwidth counts, transform slots, variant announcements)."""

from __future__ import annotations

from django.conf import settings


def redis_key(name: str) -> str:
    """``name`` under the cache's prefix, which keeps the suite's keys apart from a running
    `make run`'s on the same Redis."""
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "storage")
    return f"{prefix}:{name}"
