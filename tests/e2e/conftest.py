from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from storage_service.celery import app
from tests.subprocesses import database_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def celery_worker(django_db_setup: None, django_db_blocker: object) -> Iterator[subprocess.Popen]:
    """A real Celery worker process, on the test queue, against the test database."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
        "DATABASE_URL": database_url(),
        # The webhook tests' receivers listen on 127.0.0.1.
        "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
    }
    app.control.purge()  # messages left on the test queue by an earlier, interrupted run
    with app.connection_for_write() as connection:
        channel: Any = connection.default_channel
        channel.queue_purge(settings.SERVICE_WEBHOOK_QUEUE)
    # Webhook deliveries have their own queue and worker (as under `make run`): a thread pool,
    # so a receiver that hangs for the whole timeout holds up no other test's task.
    webhook_worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "storage_service",
            "worker",
            "-Q",
            settings.SERVICE_WEBHOOK_QUEUE,
            "-n",
            "webhooks@%h",
            "--pool",
            "threads",
            "--concurrency",
            "4",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
    )
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "storage_service",
            "worker",
            "-Q",
            settings.CELERY_TASK_DEFAULT_QUEUE,
            "--pool",
            "solo",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=0.5)
        if len(replies or []) >= 2:
            break
        if worker.poll() is not None or webhook_worker.poll() is not None:
            raise RuntimeError("the Celery worker exited at start-up")
    else:
        worker.kill()
        webhook_worker.kill()
        raise RuntimeError("the Celery worker did not answer within 30 s")
    yield worker
    for process in (worker, webhook_worker):
        process.terminate()
    for process in (worker, webhook_worker):
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
