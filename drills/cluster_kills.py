"""The cluster drill's kills: one node of each kind at its point in the run, and the time
each recovery takes, milestone by milestone."""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import requests

from bench import _common as bench
from bench import _soak_clients as soak_clients
from drills.cluster_nodes import Cluster, OwnRedis, kill_group
from scripts import devcluster, processes, servers

RECOVERY_TIMEOUT = 120.0


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
    return soak_clients.png(6000, 7)


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
