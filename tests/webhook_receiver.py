"""A real HTTP receiver for webhook tests: it records every request and answers as scripted."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.time() on arrival

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Answer:
    status: int = 200
    delay: float = 0.0


@dataclass
class Receiver:
    """Answers each path from its script (then 200); records what arrived, in order."""

    port: int = 0
    received: list[Received] = field(default_factory=list)
    scripts: dict[str, list[Answer]] = field(default_factory=dict)
    default: Answer = field(default_factory=Answer)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def script(self, path: str, *answers: Answer) -> None:
        with self.lock:
            self.scripts[path] = list(answers)

    def next_answer(self, path: str) -> Answer:
        with self.lock:
            script = self.scripts.get(path)
            return script.pop(0) if script else self.default

    def record(self, item: Received) -> None:
        with self.lock:
            self.received.append(item)

    def at(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.path == path]

    def wait_for(self, path: str, count: int, timeout: float = 20.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.at(path)
            if len(got) >= count:
                return got
            time.sleep(0.05)
        raise AssertionError(f"{path}: {len(self.at(path))} of {count} requests arrived")


def signatures(header: str) -> tuple[int, list[str]]:
    """The header's timestamp and its ``v1`` signatures (two during a rotation's overlap)."""
    items = [item.split("=", 1) for item in header.split(",")]
    timestamp = int(next(value for name, value in items if name == "t"))
    return timestamp, [value for name, value in items if name == "v1"]


def verify_signature(secret: str, header: str, body: bytes, tolerance: int = 300) -> bool:
    """What a receiver does (the README's recipe): recompute and compare with each ``v1``,
    reject stale."""
    timestamp, given = signatures(header)
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    fresh = abs(time.time() - timestamp) <= tolerance
    return fresh and any(hmac.compare_digest(expected.hexdigest(), v1) for v1 in given)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver would

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            receiver.record(
                Received(
                    path=self.path,
                    headers={k: v for k, v in self.headers.items()},
                    body=body,
                    at=time.time(),
                )
            )
            answer = receiver.next_answer(self.path)
            if answer.delay:
                time.sleep(answer.delay)
            try:
                self.send_response(answer.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except OSError:
                pass  # the sender gave up (timeout) and closed the connection

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a sender closing a keep-alive connection is not a failure of the test


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    server = _Server(("127.0.0.1", 0), _handler(receiver))
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
