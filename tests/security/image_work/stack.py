"""What the image-work tests drive: a project's client over HTTP, a stack of an API server
and prefork workers on queues of their own, a proxy in front of the object store, and
images built to be hostile."""

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
from typing import Any
from urllib.parse import urlsplit

import redis
import requests
from django.conf import settings
from PIL import Image

from storage_service import objectstore
from storage_service.celery import app
from tests.factories import make_actor
from tests.helpers import wait_for
from tests.proxy import TcpProxy
from tests.servers import ROOT, serve_api
from tests.subprocesses import database_url
from tests.variants.images import encode

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
