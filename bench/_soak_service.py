"""The soak's service and receiver: the whole service as `make run` starts it (API, worker,
beat), in the bench database and on a Redis database of its own (so a developer's `make run`
worker never takes its tasks), and a local receiver that keeps every webhook delivery it gets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from bench import _common as bench

SOAK_REDIS_DB = 14
STARTUP_TIMEOUT = 120.0


# --- The receiver ---------------------------------------------------------------------------


class Receiver:
    """Counts every webhook request by (endpoint path, event id) and keeps the bodies."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: dict[tuple[str, str], bytes] = {}
        self.duplicates = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                try:
                    event_id = json.loads(body)["id"]
                except (ValueError, KeyError):
                    event_id = "?"
                with receiver.lock:
                    key = (self.path, event_id)
                    if key in receiver.received:
                        receiver.duplicates += 1
                    receiver.received[key] = body
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


# --- The service ----------------------------------------------------------------------------


def soak_database_url() -> str:
    """Its own database beside the other benchmarks' (whose million seeded files it keeps)."""
    parts = urlsplit(bench.bench_database_url())
    name = parts.path.lstrip("/").removesuffix(bench.BENCH_SUFFIX) + "_soak" + bench.BENCH_SUFFIX
    return urlunsplit(parts._replace(path="/" + name))


def soak_redis_url() -> str:
    parts = urlsplit(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    return urlunsplit(parts._replace(path=f"/{SOAK_REDIS_DB}"))


class Service:
    """`scripts/devservices.py run` in its own process group, on the bench database."""

    def __init__(self, database_url: str, port: int) -> None:
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        env_file = bench.ROOT / "var" / "services.env"
        # `run` rewrites var/services.env; put the developer's back afterwards.
        self._saved_env_file = env_file.read_bytes() if env_file.exists() else None
        self._env_file = env_file
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": soak_redis_url(),
            "PORT": str(port),
            "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
            # As deployed: DEBUG keeps a log of every query, which is neither the production
            # speed nor the production memory profile.
            "SERVICE_DEBUG": "false",
        }
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"soak-service-{port}.log"
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "scripts.devservices", "run"],
            cwd=bench.ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the service exited; see {self.log_path}")
            try:
                if requests.get(f"{self.base_url}/readyz", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise SystemExit(f"the service was not ready within {STARTUP_TIMEOUT:.0f} s")

    def processes(self) -> dict[str, list[int]]:
        """The API's and the workers' pids, by role, found under our process tree."""
        children: dict[int, list[int]] = defaultdict(list)
        commands: dict[int, str] = {}
        for process in bench.process_stats():
            try:
                cmdline = Path(f"/proc/{process.pid}/cmdline").read_bytes()
            except OSError:
                continue
            children[process.parent].append(process.pid)
            commands[process.pid] = cmdline.replace(b"\0", b" ").decode()
        roles: dict[str, list[int]] = defaultdict(list)
        stack = [self.proc.pid]
        while stack:
            pid = stack.pop()
            stack.extend(children.get(pid, []))
            command = commands.get(pid, "")
            if "storage_service.serving" in command:
                roles["api"].append(pid)
            elif "celery" in command and " beat" in command:
                roles["beat"].append(pid)
            elif "celery" in command and " worker" in command:
                roles["webhook worker" if "webhook" in command else "worker"].append(pid)
        return roles

    def memory(self) -> dict[str, float]:
        """Resident MiB per role (summed over its processes)."""
        totals: dict[str, float] = {}
        for role, pids in self.processes().items():
            total = 0
            for pid in pids:
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
                except OSError:
                    continue
            totals[role] = total / 1024
        return totals

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()
        if self._saved_env_file is not None:
            self._env_file.write_bytes(self._saved_env_file)
