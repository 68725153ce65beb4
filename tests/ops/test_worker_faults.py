"""Workers die and Redis restarts: the work is done again, once, and nothing is lost.

Every test here runs its own Redis (a ``redis-server`` on a free port, no persistence) and its
own worker processes pointed at it, so the session worker of tests/e2e never sees these
messages and these workers never see other tests'. In this process the Celery app is pointed
at the same Redis (``private_broker``), so the service's after-commit sends land there too.

A worker's death is SIGKILL: no shutdown, no ack, its claim or lease left behind. Where the
recovery waits for time to pass (a stale variant, an expired lease), the test moves the row's
clock back instead of sleeping, as tests/e2e/test_variants.py does.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from events.models import Event
from files.models import File, StoredObject
from storage_service.celery import app
from tests.factories import Actor, make_actor, upload_body
from tests.helpers import register_webhook, start_upload, uploaded_file, wait_for
from tests.servers import ROOT, free_port
from tests.subprocesses import database_url
from tests.variants.images import encode, stripes
from tests.webhook_receiver import Answer, Receiver
from variants import services as variant_services
from variants.models import Variant
from webhooks.models import Delivery

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("variant_messages"),
]

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    """A throwaway redis-server: ``kill()`` loses everything in it, ``start()`` brings up an
    empty one on the same port (as a restart without persistence does)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                *(REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--loglevel", "warning"),
            ],
            stdout=subprocess.DEVNULL,
        )

        def answers() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    return sock.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        wait_for(answers, 10, "redis-server answers")

    def wait_for_queues(self, *queues: str) -> None:
        client = redis.Redis.from_url(self.url)
        try:
            wait_for(
                lambda: all(client.exists(f"_kombu.binding.{queue}") for queue in queues),
                what=f"a worker declares {queues}",
            )
        finally:
            client.close()

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


def _reset_broker_pools() -> None:
    # What Celery itself does after a fork: the next send connects afresh to broker_url.
    app._pool = None  # type: ignore[attr-defined]
    app.amqp._producer_pool = None  # type: ignore[attr-defined]


@pytest.fixture
def redis_server(transactional_db: None) -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def private_broker(redis_server: RedisServer) -> Iterator[RedisServer]:
    """This process's Celery sends go to the test's own Redis."""
    old = app.conf.broker_url
    app.conf.update(broker_url=redis_server.url)
    _reset_broker_pools()
    try:
        yield redis_server
    finally:
        app.conf.update(broker_url=old)
        _reset_broker_pools()


Spawn = Callable[..., "subprocess.Popen[bytes]"]


@pytest.fixture
def spawn_worker(private_broker: RedisServer) -> Iterator[Spawn]:
    """``spawn_worker(queue, **env)`` starts a worker process on the test's Redis; every one
    still running is stopped (killed) before the database is flushed."""
    started: list[subprocess.Popen[bytes]] = []

    def spawn(*queues: str, pool: str = "solo", **env: str) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "celery", "-A", "storage_service", "worker"),
                *("-Q", ",".join(queues), "-n", f"fault{len(started)}@%h", "--pool", pool),
                *("--concurrency", "2", "--without-gossip", "--without-mingle"),
                *("--without-heartbeat", "--loglevel", "WARNING"),
            ],
            cwd=ROOT,
            env={
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
                "DATABASE_URL": database_url(),
                "REDIS_URL": private_broker.url,
                "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
                **env,
            },
        )
        started.append(process)
        return process

    yield spawn
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


@contextmanager
def black_hole() -> Iterator[str]:
    """An address that accepts TCP connections and never answers: a store that hangs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def make_image_file(actor: Actor) -> File:
    return File.objects.get(id=uploaded_file(actor, encode(stripes((300, 100)), "PNG"))["id"])


def sweep_variants_now() -> int:
    """The stale sweep, as if SERVICE_VARIANT_STALE_SECONDS had passed (its sends go to the
    test's Redis after commit)."""
    with override_settings(SERVICE_VARIANT_STALE_SECONDS=0):
        return variant_services.variants_requeue_stale()


# --- (a) A worker killed mid-transform ---------------------------------------------------------


def test_a_variant_whose_worker_is_killed_mid_transform_is_made_once_by_another(
    spawn_worker: Spawn,
) -> None:
    owner = make_actor("fault-transform")
    file = make_image_file(owner)
    # The sweeps' queue and the transforms' own queue.
    default_queue = settings.CELERY_TASK_DEFAULT_QUEUE
    transforms = settings.SERVICE_TRANSFORM_QUEUE
    with black_hole() as hanging_store:
        # This worker's reads of the original hang (a store that stopped answering), so it is
        # certainly mid-transform when it dies.
        doomed = spawn_worker(default_queue, transforms, AWS_S3_ENDPOINT_URL=hanging_store)
        [thumb] = Variant.objects.filter(file=file)
        wait_for(
            lambda: Variant.objects.get(id=thumb.id).status == "processing",
            what="the first worker claims the variant",
        )
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
    stuck = Variant.objects.get(id=thumb.id)
    assert (stuck.status, stuck.attempts, stuck.output_object_id) == ("processing", 1, None)
    first_claim = stuck.claim

    # The unacked message stays in Redis until its visibility timeout; the stale sweep is what
    # sends the variant again, to a healthy worker.
    spawn_worker(default_queue, transforms)
    assert sweep_variants_now() == 1
    done = wait_for(
        lambda: (v := Variant.objects.get(id=thumb.id)).status == "ready" and v,
        what="the second worker makes the variant",
    )
    assert done.attempts == 2 and done.claim != first_claim
    assert (done.output_width, done.output_height) == (256, 85)

    # A late duplicate of the message (Redis redelivering the dead worker's unacked one) finds
    # the variant done and changes nothing.
    app.send_task("variants.tasks.process_variant", args=[thumb.id])
    time.sleep(1.0)
    again = Variant.objects.get(id=thumb.id)
    assert (again.status, again.attempts, again.output_object_id) == (
        "ready",
        2,
        done.output_object_id,
    )
    processed = Event.objects.filter(type="file.processed", data__variantId=thumb.id)
    assert processed.count() == 1
    # One result object, live; nothing else stored for this file's variants.
    outputs = StoredObject.objects.filter(project_id=owner.project.id).exclude(
        id=file.current_object_id
    )
    assert [(o.id, o.state) for o in outputs] == [(done.output_object_id, "live")]


# --- (a) A webhook worker killed mid-POST ------------------------------------------------------


def test_a_delivery_whose_worker_is_killed_mid_post_is_delivered_by_another(
    spawn_worker: Spawn, receiver: Receiver
) -> None:
    owner = make_actor("fault-delivery")
    webhook_id, _ = register_webhook(owner, receiver.url("/slow"), ["file.created"])
    # The first request is held well past the kill; any later one is answered at once.
    receiver.script("/slow", Answer(status=200, delay=15))
    doomed = spawn_worker(settings.SERVICE_WEBHOOK_QUEUE, pool="threads")
    file = start_upload(owner)["file"]

    [first] = receiver.wait_for("/slow", 1, timeout=30)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=10)
    delivery = Delivery.objects.get(endpoint_id=webhook_id)
    # The dead worker's lease holds the row: no other worker may send it meanwhile.
    assert delivery.status == "PENDING" and delivery.leased_until is not None
    assert delivery.attempts == 0

    # The lease runs out (timeout + 60 s; moved back here), then the sweep sends it again.
    Delivery.objects.filter(id=delivery.id).update(
        leased_until=timezone.now() - timedelta(seconds=1),
        next_attempt_at=timezone.now() - timedelta(minutes=1),
    )
    spawn_worker(settings.SERVICE_WEBHOOK_QUEUE, pool="threads")
    app.send_task("webhooks.tasks.sweep_due_deliveries", queue=settings.SERVICE_WEBHOOK_QUEUE)

    done = wait_for(
        lambda: (d := Delivery.objects.get(id=delivery.id)).status == "DELIVERED" and d,
        what="the delivery is delivered by the second worker",
    )
    arrivals = receiver.at("/slow")
    # At least once: the receiver saw the event twice (the killed attempt, then the retry),
    # both with the same event id, which is how it deduplicates.
    assert len(arrivals) == 2
    assert {a.json()["id"] for a in arrivals} == {first.json()["id"]} == {done.event_id}
    assert first.json()["data"]["fileId"] == file["id"]
    assert done.attempts == 1 and done.leased_until is None
    assert not Delivery.objects.filter(endpoint_id=webhook_id).exclude(status="DELIVERED").exists()


# --- (b) Redis restarted with work pending -----------------------------------------------------


def test_a_redis_restart_loses_messages_but_the_sweeps_finish_every_delivery_and_variant(
    spawn_worker: Spawn, receiver: Receiver, private_broker: RedisServer
) -> None:
    owner = make_actor("fault-redis")
    webhook_id, _ = register_webhook(
        owner, receiver.url("/all"), ["file.uploaded", "file.processed"]
    )
    # No worker yet: the messages of two uploads (deliveries, thumbnails) wait in Redis...
    before = [make_image_file(owner) for _ in range(2)]
    assert Delivery.objects.filter(endpoint_id=webhook_id, status="PENDING").count() == 2

    # ...and are lost with it.
    private_broker.kill()

    # The API keeps answering while Redis is down, without waiting long on the broker.
    started = time.monotonic()
    during = make_image_file(owner)  # start, PUT, complete: three requests, two sends lost
    took = time.monotonic() - started
    # Refused at once; one quick retry (CELERY_TASK_PUBLISH_RETRY_POLICY), then given up.
    assert took < 2.0, f"three requests took {took:.1f} s with Redis down"
    files = [*before, during]

    private_broker.start()
    spawn_worker(
        settings.CELERY_TASK_DEFAULT_QUEUE,
        settings.SERVICE_TRANSFORM_QUEUE,
        settings.SERVICE_WEBHOOK_QUEUE,
    )
    # An empty Redis has no queue bindings either: until a worker (re)connects and declares
    # its queues, a message sent to them is dropped. Workers reconnect by themselves; wait
    # for this one, as beat's next sweep would come after.
    private_broker.wait_for_queues(
        settings.CELERY_TASK_DEFAULT_QUEUE,
        settings.SERVICE_TRANSFORM_QUEUE,
        settings.SERVICE_WEBHOOK_QUEUE,
    )
    # What beat would do on its schedule: both sweeps.
    assert sweep_variants_now() == 3
    Delivery.objects.filter(endpoint_id=webhook_id).update(
        next_attempt_at=timezone.now() - timedelta(minutes=1)
    )
    app.send_task("webhooks.tasks.sweep_due_deliveries", queue=settings.SERVICE_WEBHOOK_QUEUE)

    def variants() -> list[Variant]:
        return list(Variant.objects.filter(file__in=files))

    wait_for(
        lambda: len(variants()) == 3 and all(v.status == "ready" for v in variants()),
        what="every thumbnail is made",
    )
    assert sorted(v.attempts for v in variants()) == [1, 1, 1]
    # file.uploaded of each file, then file.processed of each thumbnail (sent after commit
    # to the restarted Redis, so delivered without a sweep).
    wait_for(
        lambda: Delivery.objects.filter(endpoint_id=webhook_id, status="DELIVERED").count() == 6,
        what="every delivery is delivered",
    )
    assert not Delivery.objects.filter(endpoint_id=webhook_id).exclude(status="DELIVERED").exists()
    received = {(r.json()["type"], r.json()["data"]["fileId"]) for r in receiver.at("/all")}
    assert received == {(t, f.id) for t in ("file.uploaded", "file.processed") for f in files}


def test_a_redis_that_hangs_delays_a_request_by_a_bounded_time(
    private_broker: RedisServer, receiver: Receiver
) -> None:
    """A Redis that accepts connections but never answers: without a socket timeout the
    after-commit send would hold the request for ever (CELERY_BROKER_TRANSPORT_OPTIONS)."""
    owner = make_actor("fault-redis-hangs")
    webhook_id, _ = register_webhook(owner, receiver.url("/hook"), ["file.created"])
    with black_hole() as hanging:
        app.conf.update(broker_url=hanging.replace("http://", "redis://") + "/0")
        _reset_broker_pools()
        started = time.monotonic()
        response = owner.post(
            "/v1/files/upload", upload_body(b"abc", filename="a.txt", content_type="text/plain")
        )
        took = time.monotonic() - started
    assert response.status_code == 201, response.json()
    # A few socket timeouts of 2 s (connect, then the publish and its one retry; measured
    # 4 to 6 s), not an unbounded wait.
    assert took < 10.0, f"the request took {took:.1f} s"
    # The delivery is recorded, pending, for the sweep to send.
    assert Delivery.objects.get(endpoint_id=webhook_id).status == "PENDING"
