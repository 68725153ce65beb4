"""The cluster drill's traffic: soak's clients, spread over both API ports as a load
balancer would, with multipart uploads and copies, and retries of the store as an SDK's."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

from bench import _soak_clients as soak_clients

MULTIPART_SIZE = 9 * 1024 * 1024  # two parts: 8 MiB and 1 MiB
STORE_ATTEMPTS = 8


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    retried_connection_errors: Counter[int] = field(default_factory=Counter)  # by port
    store_retries: Counter[str] = field(default_factory=Counter)

    def count(self, counter: Counter[Any], key: Any) -> None:
        with self.lock:
            counter[key] += 1


class DrillClient(soak_clients.Client):
    """soak's client, spread over both API ports, with multipart uploads and copies."""

    def __init__(
        self,
        index: int,
        ports: tuple[int, int],
        raw_key: str,
        stats: soak_clients.Stats,
        tally: Tally,
        stop: threading.Event,
    ) -> None:
        super().__init__(index, f"http://127.0.0.1:{ports[0]}", raw_key, stats, stop)
        self.ports = ports
        self.tally = tally
        self.turn = index

    def call(self, label: str, method: str, path: str, expect: set[int], **kwargs: Any) -> Any:
        # Alternate ports; a refused or reset connection is retried on the other port, as a
        # load balancer does when a backend dies. Anything else is the API's answer.
        self.turn += 1
        for attempt in range(2 * len(self.ports)):
            port = self.ports[(self.turn + attempt) % len(self.ports)]
            self.base = f"http://127.0.0.1:{port}/v1"
            try:
                return self._call_once(label, method, path, expect, **kwargs)
            except requests.ConnectionError:
                self.tally.count(self.tally.retried_connection_errors, port)
                time.sleep(0.1)
        self.stats.problem(f"{label}: no API answered", path)
        return None

    def _call_once(self, label: str, method: str, path: str, expect: set[int], **kw: Any) -> Any:
        started = time.perf_counter()
        # A fresh connection each time,
        # and a pooled one to a killed process would only fail later.
        response = self.api.request(
            method, f"{self.base}{path}", timeout=60, headers={"Connection": "close"}, **kw
        )
        self.stats.record(label, response.status_code, time.perf_counter() - started)
        if response.status_code not in expect:
            kind = "5xx" if response.status_code >= 500 else f"unexpected {response.status_code}"
            self.stats.problem(f"{label}: {kind}", f"{path} {response.text}")
            return None
        return response.json() if response.content else {}

    def store_call(
        self, label: str, method: str, url: str, **kwargs: Any
    ) -> requests.Response | None:
        """A PUT or GET to the store, retried: a client's SDK retries 5xx and resets too."""
        for attempt in range(STORE_ATTEMPTS):
            started = time.perf_counter()
            try:
                response = self.store.request(method, url, timeout=60, **kwargs)
            except requests.RequestException as exc:
                self.tally.count(self.tally.store_retries, f"{label} {type(exc).__name__}")
            else:
                self.stats.record(label, response.status_code, time.perf_counter() - started)
                if response.status_code < 500:
                    return response
                self.tally.count(self.tally.store_retries, f"{label} {response.status_code}")
            time.sleep(0.2 * (attempt + 1))
        self.stats.problem(f"{label}: failed {STORE_ATTEMPTS} times", url[:120])
        return None

    def put(self, upload: dict[str, Any], data: bytes) -> bool:
        response = self.store_call("PUT <presigned>", "PUT", upload["url"], data=data,
                              headers=upload["headers"])  # fmt: skip
        if response is None or response.status_code != 200:
            if response is not None:
                self.stats.problem("PUT <presigned>: refused", response.text)
            return False
        return True

    def download(self) -> None:
        file_id, data = self.rng.choice(self.files)
        if not self.check_bytes(file_id, data):
            self.stats.problem("GET <presigned>: wrong bytes", file_id)

    def check_bytes(self, file_id: str, data: bytes) -> bool:
        label = "POST /v1/files/<id>/download-url"
        answer = self.call(label, "POST", f"/files/{file_id}/download-url", {200}, json={})
        if not answer:
            return False
        response = self.store_call("GET <presigned>", "GET", answer["url"])
        return response is not None and response.content == data

    def multipart(self) -> None:
        data = os.urandom(MULTIPART_SIZE)
        body = {
            "filename": f"drill-{self.index}-{self.rng.randrange(10**9)}.bin",
            "contentType": "application/octet-stream",
            "size": len(data),
            "path": f"soak/c{self.index}",
        }
        started = self.call("POST /v1/uploads/multipart", "POST", "/uploads/multipart", {201},
                            json=body)  # fmt: skip
        if not started:
            return
        upload = started["data"]["upload"]
        parts = []
        for part in upload["parts"]:
            number = part["partNumber"]
            chunk = data[(number - 1) * upload["partSize"] : number * upload["partSize"]]
            response = self.store_call("PUT <part>", "PUT", part["url"], data=chunk)
            if response is None or response.status_code != 200:
                return
            parts.append({"partNumber": number, "etag": response.headers["ETag"]})
        label = "POST /v1/uploads/multipart/<id>/complete"
        path = f"/uploads/multipart/{upload['id']}/complete"
        if self.call(label, "POST", path, {200}, json={"parts": parts}):
            self.files.append((started["data"]["file"]["id"], data))

    def copy(self) -> None:
        file_id, data = self.rng.choice(self.files)
        label = "POST /v1/files/<id>/copy"
        answer = self.call(label, "POST", f"/files/{file_id}/copy", {201}, json={})
        if answer:
            copied = answer.get("data", answer)
            self.files.append((copied["id"], data))

    def get_one(self) -> None:
        file_id = self.rng.choice(self.files)[0]
        self.call("GET /v1/files/<id>", "GET", f"/files/{file_id}", {200})

    def list_page(self) -> None:
        self.call("GET /v1/files", "GET", "/files", {200}, params={"limit": 20})

    def run(self) -> None:
        actions: list[tuple[float, Callable[[], None]]] = [
            (0.25, self.upload),
            (0.03, self.multipart),
            (0.15, self.get_one),
            (0.10, self.list_page),
            (0.20, self.download),
            (0.07, self.copy),
            (0.08, self.replace),
            (0.06, self.delete),
            (0.06, self.restore),
        ]
        weights = [w for w, _ in actions]
        while not self.stop.is_set():
            _, action = self.rng.choices(actions, weights)[0]
            if action not in (self.upload, self.multipart) and len(self.files) < 3:
                action = self.upload
            if action == self.restore and not self.deleted:
                continue
            try:
                action()
            except Exception as exc:  # a client bug must show, not end the thread silently
                self.stats.problem(f"client: {type(exc).__name__}", repr(exc))
