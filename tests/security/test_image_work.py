"""A hostile tenant against the shared image workers: each job is bounded, and one project's
burst never goes in front of everyone else's work.

The requests go over real HTTP to a real API server (``serve_api``); the transforms
run in real Celery workers (prefork, as `make run` starts them: time limits and the memory
cap need it), against the real PostgreSQL, Redis and SeaweedFS. A test whose server or worker
needs settings of its own (limits, a store behind a proxy, no worker at all) starts them on
queues of their own, so no other test's worker takes their messages; one that needs none uses
the session's server and worker. Where the store must
misbehave (hang, trickle, grow an object) a TCP proxy sits between the worker and SeaweedFS.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
import requests
from django.conf import settings
from django.test import override_settings
from django.utils import timezone
from PIL import Image

from storage_service import objectstore
from storage_service.celery import app
from tests.factories import Actor, make_actor
from tests.helpers import uploaded_file, wait_for
from tests.proxy import TcpProxy
from tests.servers import ROOT, serve_api
from tests.storage import storages_with
from tests.subprocesses import database_url
from tests.variants.images import decoded, encode, png_bomb, stripes
from variants import services as variant_services
from variants.models import Variant

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

THUMBNAIL = "w256_h256_inside_webp_q80"


def noise_png(size: tuple[int, int], seed: int = 1) -> bytes:
    """A PNG that does not compress: its size in bytes is about 3 x its pixels."""
    rng = random.Random(seed)
    return encode(Image.frombytes("RGB", size, rng.randbytes(size[0] * size[1] * 3)), "PNG")


def png16(size: tuple[int, int]) -> bytes:
    """A real 16-bit RGB PNG (Pillow cannot write one)."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)

    width, height = size
    row = b"\x00" + b"\x80\x00\x20\x00\xf0\x00" * width
    header = struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


# --- The client, over HTTP ------------------------------------------------------------------


@dataclass
class Client:
    """A project's API key against a running server, as any HTTP client would use it."""

    base: str
    key: str
    session: requests.Session = field(default_factory=requests.Session)

    def __post_init__(self) -> None:
        self.session.headers["Authorization"] = f"Bearer {self.key}"

    def post(self, path: str, body: Any = None) -> requests.Response:
        return self.session.post(f"{self.base}/v1{path}", json=body, timeout=30)

    def get(self, path: str) -> requests.Response:
        return self.session.get(f"{self.base}/v1{path}", timeout=30)

    def upload(self, data: bytes, filename: str = "image.png") -> str:
        started = self.post(
            "/files/upload", {"filename": filename, "contentType": "image/png", "size": len(data)}
        )
        assert started.status_code == 201, started.text
        upload = started.json()["upload"]
        put = requests.request(
            upload["method"], upload["url"], data=data, headers=upload["headers"], timeout=30
        )
        assert put.status_code == 200, put.text
        file_id = str(started.json()["file"]["id"])
        completed = self.post(f"/files/{file_id}/complete")
        assert completed.status_code == 200, completed.text
        return file_id

    def transform(self, file_id: str, **body: Any) -> requests.Response:
        return self.post(f"/files/{file_id}/transform", body)

    def variants(self, file_id: str) -> list[dict[str, Any]]:
        response = self.get(f"/files/{file_id}/variants")
        assert response.status_code == 200, response.text
        return list(response.json()["data"])

    def variant(self, file_id: str, variant_id: str) -> dict[str, Any]:
        return next(v for v in self.variants(file_id) if v["id"] == variant_id)

    def finished(self, file_id: str, variant_id: str, timeout: float = 60) -> dict[str, Any]:
        return dict(
            wait_for(
                lambda: (
                    (v := self.variant(file_id, variant_id))["status"] in {"ready", "failed"} and v
                ),
                timeout,
                f"variant {variant_id} finishes",
            )
        )

    def thumbnail(self, file_id: str) -> dict[str, Any]:
        return next(v for v in self.variants(file_id) if v["label"] == THUMBNAIL)


# --- The stack: an API server and workers on queues of their own ----------------------------


@dataclass
class Stack:
    queues: dict[str, str]
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self, **overrides: str) -> dict[str, str]:
        return {
            "CELERY_TASK_DEFAULT_QUEUE": self.queues["default"],
            "SERVICE_TRANSFORM_QUEUE": self.queues["transforms"],
            "SERVICE_WEBHOOK_QUEUE": self.queues["webhooks"],
            **overrides,
        }

    @contextmanager
    def api(self, **overrides: str) -> Iterator[str]:
        with serve_api(1, **self.env(**overrides)) as base:
            yield base

    def worker(self, overrides: dict[str, str] | None = None, *, concurrency: int = 1) -> str:
        """A prefork worker on this stack's sweeps and transforms queues; its node name."""
        node = f"imgwork-{uuid.uuid4().hex[:8]}@%h"
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "celery", "-A", "storage_service", "worker"),
                *("-Q", f"{self.queues['default']},{self.queues['transforms']}"),
                *("-n", node, "--pool", "prefork", "--concurrency", str(concurrency)),
                *("--without-gossip", "--without-mingle", "--loglevel", "WARNING"),
            ],
            cwd=ROOT,
            env={
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
                "DATABASE_URL": database_url(),
                **self.env(**(overrides or {})),
            },
        )
        self.workers.append(process)
        name = node.replace("%h", socket.gethostname())
        wait_for(
            lambda: process.poll() is None and app.control.ping(destination=[name], timeout=0.5),
            30,
            "the worker answers",
        )
        assert process.poll() is None, "the worker exited at start-up"
        return name

    def queued(self, queue: str) -> int:
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        try:
            return int(client.llen(queue))
        finally:
            client.close()


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


def client_for(base: str, name: str) -> Client:
    return Client(base, make_actor(name).key.raw_key)


def store_address() -> tuple[str, int]:
    url = urlsplit(str(objectstore.storage().endpoint_url))
    return str(url.hostname), int(url.port or 80)


class StoreProxy(TcpProxy):
    """The object store as the worker sees it, through a proxy that counts what the store
    sends, and can delay each GET or run a hook just before one is forwarded."""

    def __init__(
        self, *, get_delay: float = 0.0, before_get: Callable[[], None] | None = None
    ) -> None:
        super().__init__(store_address())
        self.get_delay = get_delay
        self.before_get = before_get
        self.received = 0  # bytes from the store to the worker
        self._count_lock = threading.Lock()

    def __enter__(self) -> StoreProxy:
        self.restore()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        from_store = src.getpeername()[1] == self.target[1]
        try:
            while chunk := src.recv(65536):
                if from_store:
                    with self._count_lock:
                        self.received += len(chunk)
                elif chunk.startswith(b"GET "):
                    if self.before_get is not None:
                        self.before_get()
                    time.sleep(self.get_delay)
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


@contextmanager
def hanging_store() -> Iterator[str]:
    """An address that accepts connections and never answers: a store that hangs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


# --- Source bytes -----------------------------------------------------------------------------


def test_an_original_over_the_byte_cap_is_refused_before_a_byte_of_it_is_read(
    stack: Stack,
) -> None:
    cap = 100_000
    original = noise_png((200, 200))  # about 120 KB
    assert len(original) > cap
    limits = {"SERVICE_VARIANT_MAX_SOURCE_BYTES": str(cap)}
    with StoreProxy() as proxy, stack.api(**limits) as base:
        stack.worker({"AWS_S3_ENDPOINT_URL": proxy.url, **limits})
        client = client_for(base, "big-original")
        file_id = client.upload(original)

        # An explicit transform is refused at once, with the reason.
        refused = client.transform(file_id, width=100)
        assert refused.status_code == 422
        error = refused.json()["error"]
        assert error["code"] == "NOT_PROCESSABLE"
        assert f"at most {cap} bytes" in error["message"]
        assert error["details"] == {"size": len(original), "maxSourceBytes": cap}

        # The automatic thumbnail fails with the reason, and the worker read none of the bytes.
        thumb = client.finished(file_id, client.thumbnail(file_id)["id"])
        assert thumb["status"] == "failed"
        assert thumb["failureReason"] == (
            f"The original is {len(original)} bytes; variants are made from originals of at "
            f"most {cap} bytes."
        )
        assert proxy.received < 4096, f"the worker read {proxy.received} bytes from the store"

        # An original under the cap is still made into variants.
        small = client.upload(noise_png((100, 100)))
        assert client.finished(small, client.thumbnail(small)["id"])["status"] == "ready"


def test_the_worker_reads_no_more_than_the_cap_from_an_object_that_grew(
    owner: Actor, override_objectstore: Callable[[str], None]
) -> None:
    """The HEAD saw a small object; by the GET it was replaced by a large one. The ranged GET
    stops at the cap, and the variant fails with the reason."""
    cap = 50_000
    file = uploaded_file(owner, noise_png((60, 60)))  # about 11 KB
    [thumb] = Variant.objects.filter(file_id=file["id"])
    key = thumb.source_object.storage_key
    grown = noise_png((600, 600), seed=2)  # about 1 MB
    store_client = objectstore.client()  # the real store, not through the proxy

    def grow() -> None:
        store_client.put_object(Bucket=objectstore.bucket(), Key=key, Body=grown)

    with StoreProxy(before_get=grow) as proxy:
        override_objectstore(proxy.url)
        with override_settings(SERVICE_VARIANT_MAX_SOURCE_BYTES=cap):
            outcome = variant_services.variant_process(variant_id=thumb.id)
    assert outcome.status == "failed"
    assert Variant.objects.get(id=thumb.id).failure_reason == (
        f"The original is more than {cap} bytes; variants are made from originals of at "
        f"most {cap} bytes."
    )
    # The cap, one byte more, and the response headers: not the megabyte the object now is.
    assert proxy.received < cap + 4096, f"read {proxy.received} bytes"


@pytest.fixture
def override_objectstore() -> Iterator[Callable[[str], None]]:
    """Point this process's object-store client at another endpoint for the test."""
    stack: contextlib.ExitStack = contextlib.ExitStack()

    def point(url: str) -> None:
        stack.enter_context(override_settings(STORAGES=storages_with(endpoint_url=url)))

    try:
        yield point
    finally:
        stack.close()


# --- Pixels -----------------------------------------------------------------------------------


def test_a_header_of_more_than_50_megapixels_is_refused_before_decoding(owner: Actor) -> None:
    file = uploaded_file(owner, png_bomb(8000, 7000))  # 56 MP claimed by a 1 KB file
    [thumb] = Variant.objects.filter(file_id=file["id"])
    outcome = variant_services.variant_process(variant_id=thumb.id)
    assert outcome.status == "failed"
    assert outcome.reason == (
        "The image has 8000x7000 pixels, more than the 50000000 this service decodes."
    )


@override_settings(SERVICE_VARIANT_MAX_PIXELS=15_000)
def test_sixteen_bit_samples_count_twice_against_the_pixel_cap(owner: Actor) -> None:
    deep = uploaded_file(owner, png16((100, 100)), filename="deep.png")
    flat = uploaded_file(owner, encode(stripes((100, 100)), "PNG"), filename="flat.png")
    [deep_thumb] = Variant.objects.filter(file_id=deep["id"])
    [flat_thumb] = Variant.objects.filter(file_id=flat["id"])

    refused = variant_services.variant_process(variant_id=deep_thumb.id)
    assert (refused.status, refused.reason) == (
        "failed",
        "The image has 100x100 pixels (16-bit samples count each pixel 2 times), more than "
        "the 15000 this service decodes.",
    )
    assert variant_services.variant_process(variant_id=flat_thumb.id).status == "ready"


# --- Enlargement ------------------------------------------------------------------------------


def test_a_tiny_image_is_never_enlarged_to_a_4096_pixel_avif(
    transactional_db: None, api_base: str, celery_worker: subprocess.Popen[bytes]
) -> None:
    # The session's server and worker: nothing here depends on a setting or on the pool.
    client = client_for(api_base, "tiny")
    file_id = client.upload(encode(Image.new("RGB", (1, 5), (200, 40, 40)), "PNG"))
    cover = client.transform(file_id, width=4096, height=4096, format="avif")
    inside = client.transform(file_id, width=4096, height=4096, fit="inside", format="avif")
    assert cover.status_code == inside.status_code == 202

    made_cover = client.finished(file_id, cover.json()["data"]["id"])
    made_inside = client.finished(file_id, inside.json()["data"]["id"])
    thumb = client.finished(file_id, client.thumbnail(file_id)["id"])

    # The box is shrunk to the source's scale, keeping its shape: the answer says so.
    assert made_cover["status"] == made_inside["status"] == thumb["status"] == "ready"
    assert (made_cover["width"], made_cover["height"]) == (1, 1)
    assert (made_inside["width"], made_inside["height"]) == (1, 5)
    assert (thumb["width"], thumb["height"]) == (1, 5)
    assert made_cover["params"]["width"] == 4096  # as requested
    url = client.post(f"/files/{file_id}/variants/{made_cover['id']}/download-url", {}).json()[
        "url"
    ]
    image = decoded(requests.get(url, timeout=30).content)
    assert (image.format, image.size) == ("AVIF", (1, 1))


# --- Variants per file version ----------------------------------------------------------------


def test_a_file_version_has_a_bounded_number_of_variants(stack: Stack) -> None:
    with stack.api(SERVICE_VARIANT_MAX_PER_VERSION="3") as base:
        client = client_for(base, "many-variants")
        file_id = client.upload(encode(stripes((300, 100)), "PNG"))  # its thumbnail is one
        first = client.transform(file_id, width=100)
        assert first.status_code == 202
        assert client.transform(file_id, width=101).status_code == 202

        refused = client.transform(file_id, width=102)
        assert refused.status_code == 409
        assert refused.json()["error"] == {
            "code": "VARIANT_LIMIT_REACHED",
            "message": "Version 1 of the file already has 3 variants, the most a version may "
            "have; ask again for one of them, or replace the file.",
            "details": {"fileVersion": 1, "limit": 3},
        }
        # Asking again for an existing one is still answered, and makes nothing new.
        again = client.transform(file_id, width=100)
        assert again.status_code == 202 and again.json()["data"]["id"] == first.json()["data"]["id"]
        assert len(client.variants(file_id)) == 3

        # The document lists the code for this operation.
        document = requests.get(f"{base}/v1/openapi.json", timeout=30).json()
        conflict = document["paths"]["/v1/files/{file_id}/transform"]["post"]["responses"]["409"]
        assert "`VARIANT_LIMIT_REACHED`" in conflict["description"]


# --- Time limits --------------------------------------------------------------------------------


def _claimed(file_id: str) -> Variant:
    return wait_for(
        lambda: Variant.objects.filter(file_id=file_id, status="processing").first(),
        30,
        "a worker claims the thumbnail",
    )


@pytest.mark.parametrize(
    ("soft", "hard", "limit"),
    [("2", "4", 2), ("0", "3", 3)],
    ids=["soft-limit", "hard-limit-kills-the-process"],
)
def test_a_transform_past_its_time_limit_fails_and_is_never_sent_again(
    stack: Stack, soft: str, hard: str, limit: int
) -> None:
    """The store hangs, so the transform runs on. The time limit ends it (failed, with the
    reason) before the stale threshold: the sweep, past that threshold, sends nothing again.
    With no soft limit the process is killed at the hard one and the variant fails all the
    same (the worker's parent reports it)."""
    stale = 10
    limits = {
        "SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS": soft,
        "SERVICE_VARIANT_TIME_LIMIT_SECONDS": hard,
        "SERVICE_VARIANT_STALE_SECONDS": str(stale),
    }
    with hanging_store() as store_url, stack.api() as base:
        stack.worker({"AWS_S3_ENDPOINT_URL": store_url, **limits})
        client = client_for(base, "slow")
        file_id = client.upload(encode(stripes((300, 100)), "PNG"))
        claimed = _claimed(file_id)

        failed = client.finished(file_id, claimed.id, timeout=30)
        assert failed["status"] == "failed"
        assert failed["failureReason"] == (
            f"Processing took longer than {limit} s, the most a variant may take."
        )
        # Past the stale threshold of its claim, the sweep finds nothing to send again: the
        # sweep's clock is moved past it rather than waited for.
        past_the_threshold = timezone.now() + timedelta(seconds=stale + 1)
        with override_settings(SERVICE_VARIANT_STALE_SECONDS=stale):
            assert variant_services.variants_requeue_stale(now=past_the_threshold) == 0
        after = Variant.objects.get(id=claimed.id)
        assert (after.status, after.attempts) == ("failed", 1)


def test_time_limits_must_stay_below_the_stale_threshold() -> None:
    run = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
            "SERVICE_VARIANT_TIME_LIMIT_SECONDS": "600",
            "SERVICE_VARIANT_STALE_SECONDS": "600",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert "SERVICE_VARIANT_TIME_LIMIT_SECONDS must be below SERVICE_VARIANT_STALE_SECONDS" in (
        run.stderr
    )


# --- Worker memory ------------------------------------------------------------------------------


def test_a_worker_process_over_its_memory_cap_is_replaced_after_its_task(stack: Stack) -> None:
    with stack.api() as base:
        # 1 KiB: every process is over it after any task, so each task gets a fresh one.
        node = stack.worker({"SERVICE_WORKER_MAX_MEMORY_PER_CHILD_KIB": "1"})

        def pool() -> list[int]:
            stats: dict[str, Any] = app.control.inspect(destination=[node], timeout=2).stats() or {}
            return list(stats.get(node, {}).get("pool", {}).get("processes", []))

        before = wait_for(pool, 30, "the worker's pool")
        client = client_for(base, "memory")
        file_id = client.upload(encode(stripes((300, 100)), "PNG"))
        assert client.finished(file_id, client.thumbnail(file_id)["id"])["status"] == "ready"
        after = wait_for(lambda: (now := pool()) and now != before and now, 30, "a new process")
        assert not set(before) & set(after)


# --- Queues ---------------------------------------------------------------------------------------


def test_transforms_have_a_queue_of_their_own(stack: Stack) -> None:
    """No worker runs: the thumbnail's message waits on the transforms' queue, and the sweeps'
    queue (Celery's default) stays empty, so a sweep never waits behind image work."""
    with stack.api() as base:
        client = client_for(base, "queues")
        client.upload(encode(stripes((300, 100)), "PNG"))
        assert stack.queued(stack.queues["transforms"]) == 1
        assert stack.queued(stack.queues["default"]) == 0
    # The sweeps go to Celery's default queue.
    for sweep in ("variants.tasks.requeue_stale_variants", "files.tasks.purge_deleted_files"):
        assert app.amqp.router.route({}, sweep)["queue"].name == settings.CELERY_TASK_DEFAULT_QUEUE


# --- Fairness between projects -------------------------------------------------------------------


def test_one_projects_burst_waits_behind_itself_not_in_front_of_others(stack: Stack) -> None:
    """Two worker processes; a project may run one transform at a time. Every read of an
    original takes a second (a slow store), so A's burst of seven would hold both processes
    for seconds. B's one thumbnail is made while most of A's still wait, and all of A's are
    made in the end."""
    limits = {
        "SERVICE_VARIANT_PROJECT_CONCURRENCY": "1",
        "SERVICE_VARIANT_DEFER_MAX_SECONDS": "2",
    }
    with StoreProxy(get_delay=1.0) as proxy, stack.api() as base:
        a = client_for(base, "burst-a")
        b = client_for(base, "quiet-b")
        a_file = a.upload(encode(stripes((300, 100)), "PNG"))
        for width in range(101, 107):
            assert a.transform(a_file, width=width).status_code == 202
        b_file = b.upload(encode(stripes((300, 100)), "PNG"))
        assert stack.queued(stack.queues["transforms"]) == 8  # A's seven, then B's one

        stack.worker({"AWS_S3_ENDPOINT_URL": proxy.url, **limits}, concurrency=2)
        b_thumb = b.finished(b_file, b.thumbnail(b_file)["id"])
        a_waiting = [v for v in a.variants(a_file) if v["status"] != "ready"]
        assert b_thumb["status"] == "ready"
        assert len(a_waiting) >= 4, f"B waited for A: only {len(a_waiting)} of A's still waited"

        # Nothing of A's is lost: every one is made, once.
        wait_for(lambda: all(v["status"] == "ready" for v in a.variants(a_file)), 90, "all of A's")
        assert all(v.attempts == 1 for v in Variant.objects.filter(file_id=a_file))
