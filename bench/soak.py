"""A soak: mixed traffic from 16 concurrent clients for 10 minutes against the whole service as
`make run` starts it (API, worker, beat), with webhooks to a local receiver and thumbnails.

    .venv/bin/python -m bench.soak [--clients 16] [--duration 600]

Prints requests per second, p50/p99 per endpoint, the error count (goal: zero 5xx), the events
recorded beside the deliveries made and received (goal: every event delivered to every
subscribed endpoint, byte-for-byte as recorded), and the resident memory of the API and worker
processes at the start and at the end (goal: no growth beyond 10%).

Each client is its own project and key (16 customers, not one), so the per-key rate limits
apply as they would in production; a 429 is counted but is not an error. The service runs in
the bench database and on its own Redis database (so a developer's `make run` worker never
takes its tasks), started by `scripts/devservices.py run` exactly as `make run` starts it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from bench import _common as bench

SOAK_REDIS_DB = 14
STARTUP_TIMEOUT = 120.0
SETTLE_TIMEOUT = 180.0
WARMUP_SECONDS = 60.0


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


# --- Setup and report -----------------------------------------------------------------------


def make_projects(url: str, clients: int) -> list[tuple[str, str]]:
    """(project id, raw key) per client, in the bench database."""
    bench.setup_django(url)
    from accounts.services import api_key_issue, project_create

    made = []
    for index in range(clients):
        project = project_create(name=f"soak-{index}", organization_name="soak")
        made.append((project.id, api_key_issue(project=project, environment="test").raw_key))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument(
        "--duration", type=float, default=float(os.environ.get("SOAK_SECONDS", 600))
    )
    parser.add_argument("--webhooks-per-project", type=int, default=2)
    args = parser.parse_args()

    url = soak_database_url()
    bench.create_database(url, drop_first=bench.database_exists(url))
    bench.migrate(url)
    projects = make_projects(url, args.clients)
    receiver = Receiver()
    service = Service(url, bench.free_port())
    try:
        service.wait_ready()
        bench.log(
            f"service ready at {service.base_url}; {args.clients} clients for {args.duration:.0f} s"
        )
        endpoints = register_webhooks(
            service.base_url, projects, receiver, args.webhooks_per_project
        )
        memory_idle = service.memory()
        stats = Stats()
        stop = threading.Event()
        clients = [
            Client(i, service.base_url, key, stats, stop) for i, (_, key) in enumerate(projects)
        ]
        threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        next_report = started + 60
        warm_at = started + min(WARMUP_SECONDS, args.duration / 2)
        memory_start: dict[str, float] = {}
        while time.monotonic() - started < args.duration:
            time.sleep(1)
            if not memory_start and time.monotonic() >= warm_at:
                # Workers import code and fill caches lazily on their first requests; growth
                # is measured from here, after the warm-up, and the idle figure is printed too.
                memory_start = service.memory()
            if time.monotonic() >= next_report:
                done = sum(len(v) for v in stats.latencies.values())
                elapsed_now = time.monotonic() - started
                bench.log(f"{elapsed_now:.0f} s: {done} requests, problems {dict(stats.problems)}")
                next_report += 60
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
        elapsed = time.monotonic() - started
        memory_end = service.memory()
        delivery = settle_and_compare(url, endpoints, receiver)
        report(stats, elapsed, memory_idle, memory_start, memory_end, delivery, args)
    finally:
        service.stop()


def register_webhooks(
    base_url: str, projects: list[tuple[str, str]], receiver: Receiver, per_project: int
) -> dict[str, str]:
    """Endpoint id -> receiver path, every event type subscribed."""
    endpoints = {}
    for project_id, key in projects:
        for n in range(per_project):
            path = f"{project_id}-{n}"
            response = requests.post(
                f"{base_url}/v1/webhooks",
                json={"url": receiver.url(path)},
                headers={"Authorization": f"Bearer {key}"},
                timeout=30,
            )
            response.raise_for_status()
            endpoints[response.json()["data"]["webhook"]["id"]] = "/" + path
    return endpoints


def settle_and_compare(url: str, endpoints: dict[str, str], receiver: Receiver) -> dict[str, Any]:
    """Wait for the deliveries to finish, then compare events, deliveries and arrivals."""
    from events.models import Event
    from variants.models import Variant
    from webhooks.models import Delivery

    # Thumbnails first: finishing one records file.processed, which is delivered too.
    unfinished = [Variant.Status.PENDING, Variant.Status.PROCESSING]
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline and Variant.objects.filter(status__in=unfinished).exists():
        time.sleep(2)
    while time.monotonic() < deadline:
        pending = Delivery.objects.filter(status=Delivery.Status.PENDING).count()
        if pending == 0:
            break
        time.sleep(2)
    variants = Counter(Variant.objects.values_list("status", flat=True))
    events = list(Event.objects.all())
    expected = {(endpoints[e], ev.id) for ev in events for e in endpoints if _subscribed(ev, e)}
    arrived = set(receiver.received)
    mismatched = 0
    envelopes = {ev.id: ev for ev in events}
    for (_, event_id), body in receiver.received.items():
        event = envelopes.get(event_id)
        if event is None or json.loads(body) != _envelope(event):
            mismatched += 1
    return {
        "events": len(events),
        "expected": len(expected),
        "delivered": Delivery.objects.filter(status=Delivery.Status.DELIVERED).count(),
        "failed": Delivery.objects.filter(status=Delivery.Status.FAILED).count(),
        "pending": Delivery.objects.filter(status=Delivery.Status.PENDING).count(),
        "arrived": len(arrived & expected),
        "missing": len(expected - arrived),
        "unexpected": len(arrived - expected),
        "duplicates": receiver.duplicates,
        "mismatched": mismatched,
        "variants": dict(variants),
    }


def _subscribed(event: Any, endpoint_id: str) -> bool:
    # Every soak endpoint subscribes to every type; an event belongs to one project.
    return bool(event.data.get("projectId")) and endpoint_id in _project_endpoints(
        event.data["projectId"]
    )


_endpoint_cache: dict[str, set[str]] = {}


def _project_endpoints(project_id: str) -> set[str]:
    if project_id not in _endpoint_cache:
        from webhooks.models import Endpoint

        _endpoint_cache[project_id] = set(
            Endpoint.objects.filter(project_id=project_id).values_list("id", flat=True)
        )
    return _endpoint_cache[project_id]


def _envelope(event: Any) -> dict[str, Any]:
    from events.envelope import event_envelope

    return json.loads(json.dumps(event_envelope(event)))


def report(
    stats: Stats,
    elapsed: float,
    memory_idle: dict[str, float],
    memory_start: dict[str, float],
    memory_end: dict[str, float],
    delivery: dict[str, Any],
    args: argparse.Namespace,
) -> None:
    total = sum(len(v) for v in stats.latencies.values())
    server_errors = sum(n for (_, status), n in stats.statuses.items() if status >= 500)
    limited = sum(n for (_, status), n in stats.statuses.items() if status == 429)
    rate = total / elapsed
    print(f"\nsoak: {args.clients} clients, {elapsed:.0f} s, {total} requests, {rate:.1f} req/s")
    rows = []
    for label in sorted(stats.latencies):
        samples = stats.latencies[label]
        rows.append(
            [
                label,
                str(len(samples)),
                f"{len(samples) / elapsed:.1f}",
                f"{bench.percentile(samples, 50):.1f}",
                f"{bench.percentile(samples, 99):.1f}",
            ]
        )
    print(bench.table(["endpoint", "requests", "req/s", "p50 ms", "p99 ms"], rows))
    print(f"\n5xx responses: {server_errors} (goal 0); 429 (rate limited, retried): {limited}")
    for kind, count in sorted(stats.problems.items()):
        print(f"  problem {kind}: {count}  e.g. {stats.examples[kind]}")
    print(
        "\nwebhooks: {events} events; {expected} (event, endpoint) pairs subscribed; "
        "{delivered} deliveries DELIVERED, {failed} FAILED, {pending} still PENDING; "
        "{arrived} arrived at the receiver, {missing} missing, {unexpected} unexpected, "
        "{duplicates} duplicate arrivals, {mismatched} bodies differing from the recorded "
        "event".format(**delivery)
    )
    print(f"thumbnails (of every PNG upload and replacement), by status: {delivery['variants']}")
    print(
        f"\nresident memory (MiB)    idle  after {min(WARMUP_SECONDS, args.duration / 2):.0f} s"
        "      end"
        "   growth from warm (goal <= 10%)"
    )
    for role in sorted(set(memory_start) | set(memory_end)):
        idle = memory_idle.get(role, 0.0)
        start, end = memory_start.get(role, 0.0), memory_end.get(role, 0.0)
        growth = (end - start) / start * 100 if start else float("nan")
        print(f"  {role:<20} {idle:8.1f} {start:8.1f} {end:8.1f}   {growth:+.1f}%")


if __name__ == "__main__":
    main()
