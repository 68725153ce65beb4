from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from django.conf import settings
from django.test import override_settings

from storage_service import objectstore
from storage_service.celery import app
from tests.factories import Actor, make_actor
from tests.servers import SESSION_SERVER_ENV, serve_api
from tests.subprocesses import database_url
from tests.webhook_receiver import Receiver, running_receiver
from variants import services as variants_services

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def _test_bucket() -> Iterator[None]:
    """The suite's own bucket in the real object store (SeaweedFS under `make test`); under
    pytest-xdist, this worker's own, with the browser rule `make test` put on the suite's."""
    s3 = objectstore.client()
    bucket = objectstore.bucket()
    try:
        s3.create_bucket(Bucket=bucket)
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
            raise
    shared = os.environ.get("TEST_AWS_STORAGE_BUCKET_NAME", "storage-test")
    if bucket != shared:
        try:
            rules = s3.get_bucket_cors(Bucket=shared)["CORSRules"]
        except ClientError:
            rules = []
        if rules:
            s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": rules})
    yield


@pytest.fixture
def owner(db: None) -> Actor:
    """The project whose files the test works on."""
    return make_actor("owner", organization="acme")


@pytest.fixture
def sibling(db: None) -> Actor:
    """Another project of the owner's organization: it must see nothing of the owner's."""
    return make_actor("sibling", organization="acme")


@pytest.fixture
def outsider(db: None) -> Actor:
    """A project of another organization."""
    return make_actor("outsider", organization="globex")


@pytest.fixture(autouse=True)
def _variant_messages_only_when_asked(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Variants are sent to the broker after commit (every image upload makes a thumbnail).
    Only tests that ask for ``variant_messages`` send them: the e2e tests' session worker
    keeps consuming the test queue afterwards, and would otherwise process other tests'
    thumbnails while their tables are being truncated (a deadlock at teardown)."""
    if "variant_messages" not in request.fixturenames:
        monkeypatch.setattr(variants_services, "enqueue", lambda variant_id: None)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A real HTTP receiver on 127.0.0.1, which webhooks registered in this process may reach
    while it runs (the suite's Celery workers allow private networks in their environment)."""
    with (
        running_receiver() as running,
        override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=True),
    ):
        yield running


@pytest.fixture
def variant_messages() -> None:
    """Let this test send variant messages to the broker (see above)."""


@pytest.fixture(scope="session")
def api_base(django_db_setup: None, django_db_blocker: object) -> Iterator[str]:
    """The API's base URL: one server, as `make run` starts it, for the whole session of this
    pytest worker, on its test database. A test that needs other settings starts its own
    (``serve_api``)."""
    with serve_api(workers=2, **SESSION_SERVER_ENV) as base:
        yield base


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
        channel.queue_purge(settings.SERVICE_TRANSFORM_QUEUE)
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
            f"webhooks{settings.TEST_RUN_SUFFIX}@%h",
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
            f"{settings.CELERY_TASK_DEFAULT_QUEUE},{settings.SERVICE_TRANSFORM_QUEUE}",
            "-n",
            f"tasks{settings.TEST_RUN_SUFFIX}@%h",
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
    # Generous: two workers importing Django on a loaded 2-core machine take a while, and a
    # ready pair ends the wait at once.
    # Only this pytest worker's pair: another's answers on the same broker too.
    nodes = [
        f"{name}{settings.TEST_RUN_SUFFIX}@{socket.gethostname()}" for name in ("webhooks", "tasks")
    ]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        replies = app.control.ping(destination=nodes, timeout=0.5)
        if len(replies or []) >= 2:
            break
        if worker.poll() is not None or webhook_worker.poll() is not None:
            raise RuntimeError("the Celery worker exited at start-up")
    else:
        worker.kill()
        webhook_worker.kill()
        raise RuntimeError("the Celery worker did not answer within 90 s")
    yield worker
    for process in (worker, webhook_worker):
        process.terminate()
    for process in (worker, webhook_worker):
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
