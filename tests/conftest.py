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
from django.db.backends.signals import connection_created
from django.dispatch import receiver as signal_receiver
from django.test import override_settings

from scripts import devservices
from storage_service import objectstore
from storage_service.celery import app
from tests.factories import Actor, make_actor
from tests.servers import SESSION_SERVER_ENV, serve_api
from tests.subprocesses import database_url
from tests.webhook_receiver import Receiver, running_receiver
from variants import services as variants_services

# The suite's in-process requests resolve delivery URLs as a delivery server does, with its
# threads and so its waiting places (delivery/resolution.py reads them when it is imported,
# which is after this). Servers the suite starts (serve_api) run their role's own default.
os.environ.setdefault("WEB_THREADS", "4")

ROOT = Path(__file__).resolve().parents[1]


@signal_receiver(connection_created)
def _lose_no_deadlock_to_a_straggler(connection: Any, **kwargs: object) -> None:
    """A transactional test's teardown truncates every table, one lock at a time, while a
    server or Celery worker of the session may still be finishing what the test started (a
    thumbnail, an event, a delivery). When the two wait on each other, PostgreSQL ends the
    transaction whose ``deadlock_timeout`` runs out first. This process waits ten seconds
    before it looks, against the others' one second, so the straggler is the one ended (its
    task retries a deadlock, as every task does) and the teardown goes through."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET deadlock_timeout = '10s'")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> Iterator[Any]:
    """A pytest-xdist worker never runs a ``one_process`` test (`make test` runs those in its
    second, single-process pytest), so it does not build them: schemathesis makes each of its
    per-operation items' coverage examples while collecting, about half of a worker's
    collection, all of it deselected afterwards."""
    made = yield
    if not os.environ.get("PYTEST_XDIST_WORKER") or made is None:
        return made
    nodes = made if isinstance(made, list) else [made]
    kept = [node for node in nodes if not _marked_one_process(node)]
    return kept if isinstance(made, list) else (kept[0] if kept else None)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest modules first. `make test` hands whole modules to the pytest-xdist workers
    in this order (``--dist loadfile --no-loadscope-reorder``); xdist's own order, most tests
    first, would leave for last the modules of one or two long tests (the schemathesis run, a
    worker killed mid-move), and one worker idle while the other runs them. Long is what a
    module says of itself: a ``timeout`` mark above the suite's, then ``e2e`` (real workers,
    servers of its own); then the most tests. Within a module the order stays pytest-django's,
    and every worker computes the same order from the same collection."""
    default_timeout = float(config.getini("timeout") or 0)
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def weight(module: list[pytest.Item]) -> tuple[float, bool, int]:
        timeouts = [
            float(mark.args[0])
            for item in module
            for mark in item.iter_markers("timeout")
            if mark.args and isinstance(mark.args[0], int | float)
        ]
        longest = max([t for t in timeouts if t > default_timeout], default=0.0)
        e2e = any(item.get_closest_marker("e2e") for item in module)
        return (longest, e2e, len(module))

    ordered = sorted(modules.values(), key=weight, reverse=True)
    items[:] = [item for module in ordered for item in module]


def _marked_one_process(node: object) -> bool:
    if not isinstance(node, pytest.Item | pytest.Collector):
        return False
    # A Python node takes its function's marks when its object is first read.
    getattr(node, "obj", None)
    return node.get_closest_marker("one_process") is not None


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
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    """pytest-django's test database, whose commits do not wait for the WAL to reach the disk
    (``synchronous_commit``, for every later session on it: the servers and workers the suite
    starts too). A crash would lose the last commits of a database the suite throws away;
    everything a test sees is the same, and the suite runs about a tenth faster."""
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        name = connection.ops.quote_name(connection.settings_dict["NAME"])
        cursor.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")
    # This process's own session was opened before: its next one takes the setting too.
    connection.close()


@pytest.fixture(scope="session")
def api_base(django_db_setup: None, django_db_blocker: object) -> Iterator[str]:
    """The API's base URL: one server, as `make run` starts it, for the whole session of this
    pytest worker, on its test database. A test that needs other settings starts its own
    (``serve_api``)."""
    with serve_api(workers=2, **SESSION_SERVER_ENV) as base:
        yield base


@pytest.fixture(scope="session")
def delivery_base(django_db_setup: None, django_db_blocker: object) -> Iterator[str]:
    """A delivery server beside the API, as `make run` starts one, for the whole session of
    this pytest worker: where a page's delivery URLs go."""
    with serve_api(workers=2, role="delivery", **SESSION_SERVER_ENV) as base:
        yield base


# The session webhook worker's task threads: a receiver that hangs for the whole timeout holds
# one, never another test's task.
WEBHOOK_WORKER_THREADS = 4


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
            str(WEBHOOK_WORKER_THREADS),
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        # Its database connections from a pool, as `make run` gives its own.
        env={**env, **devservices.webhook_worker_environment(threads=WEBHOOK_WORKER_THREADS)},
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
