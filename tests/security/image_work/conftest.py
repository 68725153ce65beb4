"""A hostile tenant against the shared image workers: each job is bounded, and one project's
burst never goes in front of everyone else's work.

The requests go over real HTTP to a real API server (``serve_api``); the transforms
run in real Celery workers (prefork, as `make run` starts them: time limits and the memory
cap need it), against the real PostgreSQL, Redis and SeaweedFS. A test whose server or worker
needs settings of its own (limits, a store behind a proxy, no worker at all) starts them on
queues of their own, so no other test's worker takes their messages; one that needs none uses
the session's server and worker. Where the store must
misbehave (hang, trickle, grow an object) a TCP proxy sits between the worker and SeaweedFS.

The fixture every test of this folder that needs a stack of its own takes.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator

import pytest
import redis
from django.conf import settings

from tests.security.image_work.stack import Stack


@pytest.fixture
def stack(transactional_db: None) -> Iterator[Stack]:
    tag = uuid.uuid4().hex[:8]
    queues = {
        "default": f"imgwork-{tag}",
        "transforms": f"imgwork-{tag}-transforms",
        "webhooks": f"imgwork-{tag}-webhooks",
    }
    running = Stack(queues)
    try:
        yield running
    finally:
        for process in running.workers:
            process.terminate()
        for process in running.workers:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        client.delete(*queues.values())
        client.close()
