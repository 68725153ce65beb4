"""A folder move of 100,000 files: how long it takes, rows per second, how long other requests
of the same project wait meanwhile, and whether other tenants' webhooks stay on time.

Two projects in the bench database:

- A: 100,000 files in ``move/src/d<0..99>`` (seeded with one ``INSERT ... SELECT
  generate_series``, not the API), one more file outside the folder, and a webhook endpoint
  subscribed to ``file.moved``: the move makes 100,000 events and 100,000 deliveries;
- B: one file and an endpoint for every event, PATCHed every 200 ms during the run: its
  deliveries must still arrive within 3 s while A's 100,000 wait their turn behind the
  per-project caps.

The API is served as ``make run`` serves it; the job runs on one Celery worker (solo pool)
and the webhooks on the webhook worker as ``make run`` starts it, on queues of the bench's
own; the receiver is bench/webhooks.py's (its own process). While the job runs, one client
thread GETs and PATCHes A's other file one request after another. Printed: the move's time
and rows per second (files; each also writes an event and a delivery), the p50/p99 of those
GETs and PATCHes, B's delivery latency (arrival minus the event's time), and how many of A's
deliveries arrived by the end.

    .venv/bin/python -m scripts.devservices exec -- .venv/bin/python -m bench.folder_move
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench._common import (
    ROOT,
    api_server,
    bench_database_url,
    connect,
    delete_project,
    ensure_database,
    free_port,
    log,
    percentile,
    process_cpu,
    server_environment,
    setup_django,
    shared_object,
    table,
)

FILES = 100_000
WEBHOOK_QUEUE = "bench-folder-webhooks"
GOAL_MOVE_SECONDS = 60
GOAL_P99_MS = 100
GOAL_OTHER_TENANT_SECONDS = 3


def call(base: str, key: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        base + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def seed(url: str, project_id: str, count: int) -> None:
    """``count`` uploaded files under move/src, ids made as new_id makes them."""
    from storage_service.ids import new_id

    object_id = shared_object(project_id)
    started = time.monotonic()
    with connect(url) as conn:
        conn.execute(
            """
            INSERT INTO files_file (id, project_id, mode, filename, path, content_type, size,
                status, version, checksum, current_object_id, created_at, updated_at,
                uploaded_at, status_before_delete)
            SELECT (%(ids)s::text[])[s.n], %(project)s, 'test',
                'IMG_' || s.n || '.jpg', 'move/src/d' || (s.n %% 100), 'image/jpeg', 1024,
                'uploaded', 1, 'etag:bench', %(object)s, now(), now(), now(), ''
            FROM generate_series(1, %(count)s) AS s(n)
            """,
            {
                "project": project_id,
                "object": object_id,
                "count": count,
                "ids": [new_id("file") for _ in range(count)],
            },
        )
    with connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE files_file")
    log(f"seeded {count} files in {time.monotonic() - started:.1f} s")


def remove(url: str, project_id: str) -> None:
    """The project and its rows; its deliveries first (delete_project finds tables by their
    project_id, and a delivery has none)."""
    with connect(url) as conn:
        conn.execute(
            "DELETE FROM webhooks_delivery WHERE endpoint_id IN (SELECT id FROM"
            " webhooks_endpoint WHERE project_id = %s)",
            (project_id,),
        )
    delete_project(url, project_id)


def tagged(url: str, role: str) -> str:
    """``url`` with an application_name, so each process's PostgreSQL backends are told apart."""
    parts = urlsplit(url)
    query = "&".join(filter(None, [parts.query, f"application_name=bench-{role}"]))
    return urlunsplit(parts._replace(query=query))


ROLES = ("jobs", "hooks", "api")


class CpuMeter(threading.Thread):
    """CPU seconds of each role (the jobs worker, the webhook worker, the API) between
    ``mark`` and ``stop``: its own processes and its PostgreSQL backends (found by
    application_name, so other databases' work on the shared server is not counted).
    Sampled every half second; a backend's last half second before it exits may be missed."""

    def __init__(self, url: str, processes: dict[str, list[int]]) -> None:
        super().__init__(daemon=True)
        self.url, self.processes = url, processes
        self.seen: dict[int, tuple[str, float, float]] = {}  # pid -> role, first, last
        self.marked = threading.Event()
        self.done = threading.Event()

    def _sample(self, conn: Any) -> None:
        rows = conn.execute(
            "SELECT pid, application_name FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name LIKE 'bench-%'"
        ).fetchall()
        for pid, name in rows:
            used = process_cpu(pid)
            role, first, _ = self.seen.get(pid, (name.removeprefix("bench-"), used, used))
            if not self.marked.is_set():
                first = used
            self.seen[pid] = (role, first, max(used, self.seen.get(pid, ("", 0, 0))[2]))

    def run(self) -> None:
        with connect(self.url, autocommit=True) as conn:
            while not self.done.is_set():
                self._sample(conn)
                time.sleep(0.5)
            self._sample(conn)

    def mark(self) -> None:
        self.start_cpu = {role: self._own(role) for role in self.processes}
        self.marked.set()

    def stop(self) -> dict[str, tuple[float, float]]:
        """Per role: (its processes' CPU seconds, its backends' CPU seconds) since ``mark``."""
        own = {role: self._own(role) - self.start_cpu[role] for role in self.processes}
        self.done.set()
        self.join()
        backends = dict.fromkeys(self.processes, 0.0)
        for role, first, last in self.seen.values():
            if role in backends:
                backends[role] += last - first
        return {role: (own[role], backends[role]) for role in self.processes}

    def _own(self, role: str) -> float:
        total = 0.0
        for root in self.processes[role]:
            total += process_cpu(root)
            with contextlib.suppress(OSError):
                children = Path(f"/proc/{root}/task/{root}/children").read_text().split()
                total += sum(process_cpu(int(child)) for child in children)
        return total


def start(name: str, command: list[str], url: str, **extra: str) -> subprocess.Popen[bytes]:
    env = server_environment(url, **_queues(), **extra)
    log(f"{name}: {' '.join(command[1:6])} ...")
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)


def _queues() -> dict[str, str]:
    return {
        "SERVICE_WEBHOOK_QUEUE": WEBHOOK_QUEUE,
        "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
    }


def arrivals(port: int) -> list[tuple[str, str, float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/arrivals", timeout=30) as response:
        return [tuple(item) for item in json.loads(response.read())]  # type: ignore[misc]


class Probe(threading.Thread):
    """Requests one after another until stopped, recording each one's latency."""

    def __init__(self, requests: list[tuple[str, str, Any]], base: str, key: str, pause: float):
        super().__init__(daemon=True)
        self.requests, self.base, self.key, self.pause = requests, base, key, pause
        self.samples: dict[str, list[float]] = {method: [] for method, _, _ in requests}
        self.errors = 0
        self.stop = threading.Event()

    def run(self) -> None:
        turn = 0
        while not self.stop.is_set():
            method, path, body = self.requests[turn % len(self.requests)]
            if callable(body):
                body = body(turn)
            started = time.perf_counter()
            status, _ = call(self.base, self.key, method, path, body)
            self.samples[method].append((time.perf_counter() - started) * 1000)
            self.errors += status >= 400
            turn += 1
            if self.pause:
                time.sleep(self.pause)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=FILES)
    parser.add_argument("--drain", type=float, default=30, help="seconds to watch after")
    args = parser.parse_args()

    url = bench_database_url()
    ensure_database(url)
    os.environ.update(_queues())
    setup_django(url)
    from accounts.models import Project
    from accounts.services import api_key_issue, project_create

    for old in Project.objects.filter(name__startswith="bench-folder-").values_list(
        "id", flat=True
    ):
        log(f"removing the leftover project {old}")
        remove(url, old)
    from events.models import Event
    from files.models import File
    from jobs.models import Job
    from storage_service.celery import app
    from webhooks.models import Delivery

    project_a = project_create(name=f"bench-folder-move-{int(time.time())}")
    project_b = project_create(name=f"bench-folder-other-{int(time.time())}")
    key_a = api_key_issue(project=project_a, environment="test").raw_key
    key_b = api_key_issue(project=project_b, environment="test").raw_key
    seed(url, project_a.id, args.files)

    receiver_port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, "-m", "bench.webhooks", "--serve-receiver", str(receiver_port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    assert receiver.stdout is not None and receiver.stdout.readline().strip() == b"ready"
    from scripts import devservices

    celery = str(Path(sys.executable).parent / "celery")
    jobs_worker = start(
        "jobs worker",
        [
            celery,
            "-A",
            "storage_service",
            "worker",
            "-Q",
            app.conf.task_default_queue,  # where the API sends jobs, as under `make run`
            "-n",
            "bench-jobs@%h",
            "--pool",
            "solo",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "WARNING",
        ],
        tagged(url, "jobs"),
    )
    hooks_worker = start(
        "webhook worker",
        [str(part) for part in devservices.webhook_worker_command("bench-folder-hooks@%h")],
        tagged(url, "hooks"),
        **devservices.webhook_worker_environment(),
    )
    try:
        with api_server(tagged(url, "api")) as server:
            base = server.base_url
            hook = f"http://127.0.0.1:{receiver_port}"
            assert (
                call(
                    base,
                    key_a,
                    "POST",
                    "/v1/webhooks",
                    {"url": hook + "/a", "events": ["file.moved"]},
                )[0]
                == 201
            )
            assert call(base, key_b, "POST", "/v1/webhooks", {"url": hook + "/b"})[0] == 201
            _, other_a = call(
                base,
                key_a,
                "POST",
                "/v1/files/upload",
                {"filename": "other.txt", "contentType": "text/plain", "size": 3, "path": "other"},
            )
            _, other_b = call(
                base,
                key_b,
                "POST",
                "/v1/files/upload",
                {"filename": "b.txt", "contentType": "text/plain", "size": 3},
            )
            a_id, b_id = other_a["file"]["id"], other_b["file"]["id"]
            time.sleep(2)
            arrivals(receiver_port)  # forget the uploads' own events

            same_project = Probe(
                [
                    ("GET", f"/v1/files/{a_id}", None),
                    ("PATCH", f"/v1/files/{a_id}", lambda n: {"metadata": {"n": n}}),
                ],
                base,
                key_a,
                pause=0.0,
            )
            other_tenant = Probe(
                [("PATCH", f"/v1/files/{b_id}", lambda n: {"metadata": {"n": n}})],
                base,
                key_b,
                pause=0.2,
            )
            meter = CpuMeter(
                url,
                {
                    "jobs": [jobs_worker.pid],
                    "hooks": [hooks_worker.pid],
                    "api": [server.proc.pid],
                },
            )
            meter.start()
            time.sleep(1)
            other_tenant.start()
            same_project.start()
            meter.mark()
            started = time.monotonic()
            status, body = call(
                base, key_a, "POST", "/v1/folders/move", {"from": "move", "to": "moved"}
            )
            assert status == 202, body
            job_id = body["data"]["id"]
            while True:
                job = Job.objects.get(id=job_id)
                if job.status in ("succeeded", "failed"):
                    break
                time.sleep(0.2)
            moved_seconds = (job.finished_at - job.created_at).total_seconds()
            waited = time.monotonic() - started
            cpu = meter.stop()
            same_project.stop.set()
            time.sleep(args.drain)
            other_tenant.stop.set()
            same_project.join()
            other_tenant.join()

            got = arrivals(receiver_port)
            b_events = {
                e.id: e.created_at.timestamp()
                for e in Event.objects.filter(project_id=project_b.id)
            }
            b_latency = [
                at - b_events[evt] for path, evt, at in got if path == "/b" and evt in b_events
            ]
            a_arrived = sum(1 for path, _, _ in got if path == "/a")
            left_in_src = File.objects.filter(
                project_id=project_a.id, path__startswith="move/"
            ).count()
            pending_a = Delivery.objects.filter(
                endpoint__project_id=project_a.id, status="PENDING"
            ).count()
    finally:
        for proc in (jobs_worker, hooks_worker, receiver):
            proc.terminate()
        for proc in (jobs_worker, hooks_worker, receiver):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()

    get_ms, patch_ms = same_project.samples["GET"], same_project.samples["PATCH"]
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average at the end: {' '.join(load)}")
    print(f"folder move of {args.files:,} files ({job.status}; {left_in_src} left in move/)")
    print(
        table(
            ["figure", "value", "goal"],
            [
                [
                    "move time (job created -> finished)",
                    f"{moved_seconds:.1f} s",
                    f"< {GOAL_MOVE_SECONDS} s",
                ],
                ["seen by the client (202 -> succeeded)", f"{waited:.1f} s", ""],
                ["files moved per second", f"{args.files / moved_seconds:,.0f}", ""],
                [
                    "rows written per second (file + event + delivery)",
                    f"{3 * args.files / moved_seconds:,.0f}",
                    "",
                ],
                [
                    f"GET other file p50 / p99 ({len(get_ms)} requests)",
                    f"{percentile(get_ms, 50):.1f} / {percentile(get_ms, 99):.1f} ms",
                    f"p99 < {GOAL_P99_MS} ms",
                ],
                [
                    f"PATCH other file p50 / p99 ({len(patch_ms)} requests)",
                    f"{percentile(patch_ms, 50):.1f} / {percentile(patch_ms, 99):.1f} ms",
                    f"p99 < {GOAL_P99_MS} ms",
                ],
                [
                    f"other tenant's deliveries p50 / max ({len(b_latency)})",
                    f"{percentile(b_latency, 50):.2f} / {percentile(b_latency, 100):.2f} s",
                    f"< {GOAL_OTHER_TENANT_SECONDS} s",
                ],
                [
                    "A's file.moved deliveries arrived / still pending",
                    f"{a_arrived:,} / {pending_a:,}",
                    "",
                ],
                *(
                    [
                        f"CPU s during the move: {role} process / its PostgreSQL backends",
                        f"{own:.1f} / {backends:.1f}",
                        "",
                    ]
                    for role, (own, backends) in cpu.items()
                ),
                [
                    "request errors (same project / other tenant)",
                    f"{same_project.errors} / {other_tenant.errors}",
                    "0",
                ],
            ],
        )
    )
    for project in (project_a, project_b):
        remove(url, project.id)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
