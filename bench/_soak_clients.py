"""The soak's clients: each its own project and key, sending mixed traffic (uploads, images
among them, lists, downloads, changes) until told to stop, and the figures they share."""

from __future__ import annotations

import io
import os
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

# --- The clients ----------------------------------------------------------------------------


@dataclass
class Stats:
    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    problems: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def record(self, label: str, status: int, seconds: float) -> None:
        with self.lock:
            self.latencies[label].append(seconds * 1000)
            self.statuses[(label, status)] += 1

    def problem(self, kind: str, example: str) -> None:
        with self.lock:
            self.problems[kind] += 1
            self.examples.setdefault(kind, example[:300])


def png(size: int, seed: int) -> bytes:
    from PIL import Image

    rng = random.Random(seed)
    image = Image.new("RGB", (size, size), (rng.randrange(256), rng.randrange(256), 40))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


class Client:
    def __init__(
        self, index: int, base_url: str, raw_key: str, stats: Stats, stop: threading.Event
    ):
        self.index = index
        self.base = f"{base_url}/v1"
        self.stats = stats
        self.stop = stop
        self.rng = random.Random(index)
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"Bearer {raw_key}"
        self.store = requests.Session()
        self.files: list[tuple[str, bytes]] = []  # uploaded: (id, current bytes)
        self.deleted: list[tuple[str, bytes]] = []

    def call(self, label: str, method: str, path: str, expect: set[int], **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            response = self.api.request(method, f"{self.base}{path}", timeout=60, **kwargs)
        except requests.RequestException as exc:
            self.stats.problem(f"{label}: {type(exc).__name__}", str(exc))
            return None
        self.stats.record(label, response.status_code, time.perf_counter() - started)
        if response.status_code == 429:
            time.sleep(float(response.headers.get("Retry-After", "1")))
            return None
        if response.status_code not in expect:
            kind = "5xx" if response.status_code >= 500 else f"unexpected {response.status_code}"
            self.stats.problem(f"{label}: {kind}", response.text)
            return None
        return response.json() if response.content else {}

    def put(self, upload: dict[str, Any], data: bytes) -> bool:
        started = time.perf_counter()
        response = self.store.put(upload["url"], data=data, headers=upload["headers"], timeout=60)
        self.stats.record("PUT <presigned>", response.status_code, time.perf_counter() - started)
        if response.status_code != 200:
            self.stats.problem("PUT <presigned>: refused", response.text)
        return response.status_code == 200

    def payload(self) -> tuple[bytes, str]:
        if self.rng.random() < 0.3:  # images get automatic thumbnails
            return png(self.rng.choice([64, 300, 800]), self.rng.randrange(10**9)), "image/png"
        return os.urandom(self.rng.randrange(1, 64 * 1024)), "application/octet-stream"

    def upload(self) -> None:
        data, content_type = self.payload()
        body = {
            "filename": f"soak-{self.index}-{self.rng.randrange(10**9)}.bin",
            "contentType": content_type,
            "size": len(data),
            "path": f"soak/c{self.index}",
        }
        started = self.call("POST /v1/files/upload", "POST", "/files/upload", {201}, json=body)
        if not started or not self.put(started["upload"], data):
            return
        file_id = started["file"]["id"]
        if self.call("POST /v1/files/<id>/complete", "POST", f"/files/{file_id}/complete", {200}):
            self.files.append((file_id, data))

    def download(self) -> None:
        file_id, data = self.rng.choice(self.files)
        answer = self.call(
            "POST /v1/files/<id>/download-url",
            "POST",
            f"/files/{file_id}/download-url",
            {200},
            json={},
        )
        if not answer:
            return
        started = time.perf_counter()
        response = self.store.get(answer["url"], timeout=60)
        self.stats.record("GET <presigned>", response.status_code, time.perf_counter() - started)
        if response.content != data:
            self.stats.problem("GET <presigned>: wrong bytes", file_id)

    def replace(self) -> None:
        index = self.rng.randrange(len(self.files))
        file_id, _ = self.files[index]
        data, content_type = self.payload()
        started = self.call(
            "POST /v1/files/<id>/replace",
            "POST",
            f"/files/{file_id}/replace",
            {200},
            json={"contentType": content_type, "size": len(data)},
        )
        if not started or not self.put(started["upload"], data):
            return
        if self.call(
            "POST /v1/files/<id>/replace/complete",
            "POST",
            f"/files/{file_id}/replace/complete",
            {200},
        ):
            self.files[index] = (file_id, data)

    def delete(self) -> None:
        file_id, data = self.files.pop(self.rng.randrange(len(self.files)))
        if self.call("DELETE /v1/files/<id>", "DELETE", f"/files/{file_id}", {200}):
            self.deleted.append((file_id, data))

    def restore(self) -> None:
        file_id, data = self.deleted.pop()
        if self.call("POST /v1/files/<id>/restore", "POST", f"/files/{file_id}/restore", {200}):
            self.files.append((file_id, data))

    def run(self) -> None:
        actions: list[tuple[float, Callable[[], None]]] = [
            (0.25, self.upload),
            (
                0.20,
                lambda: self.call("GET /v1/files", "GET", "/files", {200}, params={"limit": 20}),
            ),
            (
                0.05,
                lambda: self.call(
                    "GET /v1/files?path",
                    "GET",
                    "/files",
                    {200},
                    params={"path": f"soak/c{self.index}"},
                ),
            ),
            (
                0.20,
                lambda: self.call(
                    "GET /v1/files/<id>", "GET", f"/files/{self.rng.choice(self.files)[0]}", {200}
                ),
            ),
            (0.15, self.download),
            (0.07, self.replace),
            (0.04, self.delete),
            (0.04, self.restore),
        ]
        weights = [w for w, _ in actions]
        while not self.stop.is_set():
            _, action = self.rng.choices(actions, weights)[0]
            if action is not self.upload and len(self.files) < 3:
                action = self.upload
            if action == self.restore and not self.deleted:
                continue
            try:
                action()
            except Exception as exc:  # a client bug must show, not kill the thread silently
                self.stats.problem(f"client: {type(exc).__name__}", repr(exc))
