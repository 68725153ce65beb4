"""`make drill-db`: the primary PostgreSQL dies under load; nothing acknowledged is lost.

    python -m scripts.devservices exec -- python -m drills.database [--files 100000] [--short]

A pg_auto_failover formation (scripts/pgcluster.py: a monitor, a primary, a synchronous
standby) on CLUSTER_PG_PORT (default 55432) and the two ports after it; an API server, a
transform worker, a webhook worker and beat on it through the multi-host URL; the store and
Redis as `devservices exec` gives them. Under load (clients uploading with their retries, a
folder move of ``--files`` files, reads, a webhook endpoint with a live receiver and a replay
of its events) the primary's machine is killed (SIGKILL to its pg_autoctl and PostgreSQL).
Then the drill prints how long the service answered 503 (each with Retry-After, never a 500),
when it answered again, every acknowledged upload checked (present, ``uploaded``, bytes
intact), the job's outcome, the events of the window delivered and replayed, and ``lost``.
The old primary then comes back as the new standby, and is killed too: the primary goes on
alone (pg_auto_failover's ``wait_primary``), so reads and writes keep answering.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import io
import json
import logging
import os
import secrets
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import requests

from drills import LIMITS_OUT_OF_REACH
from scripts import devservices as ds
from scripts import pgcluster, processes, servers

DRILL_DIR = servers.VAR / "drill-db"
SHORT_FILES = 2_000
DEFAULT_FILES = 100_000
FOLDER = "team-1"
TARGET = "moved/team-1"


@dataclass
class Probe:
    """What the readers saw: (seconds since the kill, status) of every answer."""

    answers: list[tuple[float, int]] = field(default_factory=list)
    without_retry_after: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class Receiver(http.server.BaseHTTPRequestHandler):
    received: Counter[str] = Counter()
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        event_id = str(json.loads(body or b"{}").get("id", ""))
        with Receiver.lock:
            Receiver.received[event_id] += 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def start_receiver() -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/hook"


def start_formation(formation: pgcluster.Formation) -> dict[str, processes.Child]:
    formation.prepare()
    nodes: dict[str, processes.Child] = {}

    def spawn(name: str, cmd: list[str | Path]) -> None:
        nodes[name] = processes.spawn(name, cmd, log_path=DRILL_DIR / f"{name}.log")

    spawn("monitor", formation.monitor_command())
    formation.configure_monitor()
    spawn("node1", formation.node_command("node1"))
    pgcluster.wait_for(lambda: formation.primary() == "node1", "node1 to be the primary")
    spawn("node2", formation.node_command("node2"))
    formation.wait_healthy()
    return nodes


def kill_group(child: processes.Child) -> None:
    child.signal_group(signal.SIGKILL)
    child.proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m drills.database", description=__doc__)
    parser.add_argument("--files", type=int, default=None, help="files in the moved folder")
    parser.add_argument("--short", action="store_true", help=f"{SHORT_FILES} files (CI)")
    parser.add_argument("--uploaders", type=int, default=3)
    args = parser.parse_args(argv)
    files = args.files or (SHORT_FILES if args.short else DEFAULT_FILES)
    port = ds.positive_int_env("CLUSTER_PG_PORT", 55432)
    DRILL_DIR.mkdir(parents=True, exist_ok=True)
    formation = pgcluster.Formation(port, root=DRILL_DIR / "pg")
    # A fresh formation each time: the last drill left its nodes killed.
    shutil.rmtree(formation.root, ignore_errors=True)
    nodes: dict[str, processes.Child] = {}
    apps: list[processes.Child] = []
    try:
        processes.log(f"starting the formation on ports {port}-{port + 2}")
        nodes = start_formation(formation)
        return drill(formation, nodes, apps, files, args.uploaders)
    except processes.ServiceError as exc:
        processes.log(f"error: {exc}")
        return 1
    finally:
        processes.stop_children(apps)
        processes.stop_children(list(nodes.values()))


def drill(
    formation: pgcluster.Formation,
    nodes: dict[str, processes.Child],
    apps: list[processes.Child],
    files: int,
    uploaders: int,
) -> int:
    url = formation.url()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DATABASE_CONNECT_TIMEOUT": "2",
        "DJANGO_SETTINGS_MODULE": "storage_service.settings.dev",
        "PYTHONUNBUFFERED": "1",
        "WEB_CONCURRENCY": "2",
        **LIMITS_OUT_OF_REACH,
    }
    migrate = processes.spawn(
        "migrate",
        [sys.executable, "manage.py", "migrate", "--noinput"],
        child_env=env,
        log_path=DRILL_DIR / "migrate.log",
    )
    if migrate.proc.wait() != 0:
        raise processes.ServiceError(f"migrate failed; see {DRILL_DIR / 'migrate.log'}")
    api_port = servers.free_port()
    for name, cmd in (
        ("api", ds.api_command(api_port)),
        ("worker", ds.transform_worker_command(1, node="drilldb@%h")),
        ("webhooks", ds.webhook_worker_command(node="drilldb-webhooks@%h")),
        # The sweeps: what a message given up during the outage carried is sent again.
        ("beat", ds.beat_command(DRILL_DIR / "celerybeat-schedule")),
    ):
        child_env = {**env, **ds.webhook_worker_environment()} if name == "webhooks" else env
        log_path = DRILL_DIR / f"{name}.log"
        apps.append(processes.spawn(name, cmd, child_env=child_env, log_path=log_path))
    base = f"http://127.0.0.1:{api_port}"
    pgcluster.wait_for(lambda: _answers(f"{base}/readyz"), "the API", timeout=60)

    os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")})
    import django

    django.setup()
    from django.db import connections

    from accounts.services import api_key_issue, project_create
    from bench import _common as bench
    from files.models import File
    from webhooks.models import Event

    project = project_create(name=f"drill-db-{int(time.time())}")
    raw_key = api_key_issue(project=project, environment="test", name="drill").raw_key
    bench.seed_files(
        url,
        project_id=str(project.id),
        object_id=bench.shared_object(str(project.id)),
        rows=files,
        rebuild_indexes=False,
    )
    # A folder move takes every file of the folder but the deleted ones, which stay.
    in_folder = (
        File.objects.filter(project=project, path__startswith=f"{FOLDER}/")
        .exclude(status="deleted")
        .count()
    )
    processes.log(f"seeded {files:,} files, {in_folder:,} in {FOLDER}/ (not deleted)")
    from storage_client import Client

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise

    receiver, hook_url = start_receiver()
    client = Client(raw_key, base, max_retries=60, max_retry_wait=5)
    webhook, _secret = client.webhooks.create(hook_url)
    window = whole_milliseconds(datetime.now(UTC))

    stop = threading.Event()
    killed_at: list[float] = []
    probe = Probe()
    acknowledged: list[tuple[str, str]] = []
    acknowledged_at: list[float] = []
    upload_errors: list[str] = []

    def since_kill() -> float:
        return time.monotonic() - killed_at[0] if killed_at else -1.0

    def read() -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {raw_key}"
        while not stop.is_set():
            try:
                response = session.get(f"{base}/v1/files", params={"limit": 5}, timeout=15)
            except requests.RequestException:
                continue
            with probe.lock:
                probe.answers.append((since_kill(), response.status_code))
                if response.status_code == 503 and not response.headers.get("Retry-After"):
                    probe.without_retry_after += 1
            time.sleep(0.05)

    def upload(index: int) -> None:
        own = Client(raw_key, base, max_retries=60, max_retry_wait=5)
        n = 0
        while not stop.is_set():
            n += 1
            data = secrets.token_bytes(2048)
            try:
                done = own.files.upload(io.BytesIO(data), filename=f"u{index}-{n}.bin")
            except Exception as exc:  # an upload not acknowledged: not a loss, but shown
                upload_errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            acknowledged.append((done.id, hashlib.sha256(data).hexdigest()))
            acknowledged_at.append(since_kill())

    threads = [threading.Thread(target=read, daemon=True) for _ in range(2)]
    threads += [threading.Thread(target=upload, args=(i,), daemon=True) for i in range(uploaders)]
    for thread in threads:
        thread.start()
    job = client.folders.move(FOLDER, TARGET)
    time.sleep(2)
    # Every event so far sent again, the replay's steps running through the failover. Its
    # window ends a second ago: an upload's event is stamped inside its transaction and seen
    # only once that commits, so one stamped a moment before "now" may not be there yet. In
    # whole milliseconds, as the client sends it, so the drill counts the window the API reads.
    replay_until = whole_milliseconds(datetime.now(UTC) - timedelta(seconds=1))
    replayed = client.webhooks.replay(webhook.id, since=window, until=replay_until)
    time.sleep(1)
    primary = formation.primary() or "node1"
    standby = next(name for name in pgcluster.NODES if name != primary)
    processes.log(f"SIGKILL to {primary} (pg_autoctl and PostgreSQL), the primary")
    killed_at.append(time.monotonic())
    kill_group(nodes[primary])
    pgcluster.wait_for(lambda: formation.primary() == standby, f"{standby} promoted", 120)
    promoted = since_kill()
    time.sleep(5)
    # The old primary's machine comes back: it rejoins as the new primary's standby.
    nodes[primary] = processes.spawn(
        primary, formation.node_command(primary), log_path=DRILL_DIR / f"{primary}.again.log"
    )
    formation.wait_healthy()
    rejoined = since_kill()
    processes.log(f"{primary} rejoined as standby; SIGKILL to it too")
    kill_group(nodes[primary])
    second_kill = since_kill()
    time.sleep(8)
    stop.set()
    for thread in threads:
        thread.join(timeout=120)
    finished = client.jobs.wait(job.id, timeout=600)

    statuses = Counter(status for _, status in probe.answers)
    unavailable = [t for t, status in probe.answers if status == 503 and t >= 0]
    first_ok_after = next(
        (t for t, status in probe.answers if status == 200 and unavailable and t > unavailable[-1]),
        None,
    )
    after_second = Counter(status for t, status in probe.answers if t > second_kill)
    # Every acknowledged upload: present, uploaded, bytes intact.
    missing = 0
    why_missing: Counter[str] = Counter()
    for file_id, digest in acknowledged:
        got = io.BytesIO()
        try:
            stored = client.files.get(file_id)
            client.files.download(file_id, got)
        except Exception as exc:
            missing += 1
            why_missing[f"{type(exc).__name__}: {exc}"[:200]] += 1
            continue
        if stored.status != "uploaded":
            missing += 1
            why_missing[f"status {stored.status}"] += 1
        elif hashlib.sha256(got.getvalue()).hexdigest() != digest:
            missing += 1
            why_missing["bytes differ"] += 1
    # This process's own connection went with the old primary: open one to the new.
    connections.close_all()
    moved = File.objects.filter(project=project, path__startswith=f"{TARGET}/").count()
    left = (
        File.objects.filter(project=project, path__startswith=f"{FOLDER}/")
        .exclude(status="deleted")
        .count()
    )
    deadline = time.monotonic() + 120
    while True:
        in_window = Event.objects.filter(project_id=project.id, created_at__gte=window)
        events = {str(e) for e in in_window.values_list("id", flat=True)}
        replay_events = {
            str(e)
            for e in in_window.filter(created_at__lt=replay_until).values_list("id", flat=True)
        }
        with Receiver.lock:
            undelivered = {e for e in events if Receiver.received[e] < 1}
            unreplayed = {e for e in replay_events if Receiver.received[e] < 2}
        if not (undelivered or unreplayed) or time.monotonic() > deadline:
            break
        time.sleep(2)
    receiver.shutdown()
    errors = sum(count for status, count in statuses.items() if status >= 500 and status != 503)
    lost = (
        missing
        + len(undelivered)
        + len(unreplayed)
        + (
            0
            if moved == in_folder == finished.files_done == finished.files_total and left == 0
            else 1
        )
    )
    lines = [
        f"primary killed; {standby} promoted after {promoted:.1f} s",
        f"503s for {unavailable[-1] - unavailable[0]:.1f} s"
        if unavailable
        else "no 503 seen by the readers",
        f"answered again {first_ok_after:.1f} s after the kill" if first_ok_after else "",
        f"answers: {dict(sorted(statuses.items()))}; 503 without Retry-After: "
        f"{probe.without_retry_after}; other 5xx: {errors}",
        f"uploads acknowledged: {len(acknowledged)}, checked (present, uploaded, bytes): "
        f"{len(acknowledged) - missing} ok, {missing} missing; "
        f"not acknowledged: {len(upload_errors)}",
        f"why missing: {why_missing.most_common(3)}" if why_missing else "",
        f"why not acknowledged: {Counter(upload_errors).most_common(3)}" if upload_errors else "",
        f"folder move of {in_folder:,} files ({files:,} in the project): {finished.status}, "
        f"files_done {finished.files_done} of {finished.files_total}; {moved:,} moved, {left} left",
        f"events of the window: {len(events)}, delivered at least once: "
        f"{len(events) - len(undelivered)}",
        f"webhook replay of {len(replay_events)} events ({replayed} deliveries): "
        f"{len(replay_events) - len(unreplayed)} received again",
        f"{primary} rejoined as standby {rejoined:.1f} s after the kill, killed again: "
        f"reads after that {dict(sorted(after_second.items()))}, uploads acknowledged after "
        f"that {sum(1 for t in acknowledged_at if t > second_kill)} (the primary goes on alone)",
        f"lost: {lost}",
    ]
    for line in filter(None, lines):
        print(f"drill-db | {line}", flush=True)
    return 0 if lost == 0 and errors == 0 else 1


def whole_milliseconds(moment: datetime) -> datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


if __name__ == "__main__":
    sys.exit(main())
