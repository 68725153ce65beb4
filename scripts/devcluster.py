#!/usr/bin/env python3
"""`make cluster`: the service as several machines would run it, on this one.

    python -m scripts.devcluster          # until Ctrl-C

- Redis as `make run` finds it (reused where it answers, else embedded); PostgreSQL likewise,
  or with ``--postgres formation`` (what `make cluster` runs) a pg_auto_failover formation
  (scripts/pgcluster.py: a monitor, a primary, a synchronous standby), which the API, the
  workers and beat reach through one multi-host URL that finds the primary;
- SeaweedFS as a cluster: one master (replication 001: every object on two volume servers),
  three volume servers, each with its own directory and port, and a filer with the S3 gateway
  on SEAWEEDFS_S3_PORT;
- two API processes (storage_service/serving.py) on $PORT and $PORT+1;
- two transform workers, one webhook worker, exactly one beat.

Every process runs in its own process group; ``var/cluster.json`` maps each role to the pids
of the group leaders (``os.killpg(pid, SIGKILL)`` takes one "machine" down, workers' children
included). A process that dies is started again after a second, as systemd's
``Restart=always`` would (deploy/systemd/), and cluster.json is rewritten with its new pid.
``var/services.env`` is written as by `make run`, so ``manage.py`` talks to this cluster.
Ctrl-C stops everything started here.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scripts import devservices as ds
from scripts import pgcluster, processes, servers

CLUSTER_FILE = servers.VAR / "cluster.json"
CLUSTER_DIR = servers.VAR / "cluster"
VOLUME_SERVERS = 3
REPLICATION = "001"  # one extra copy on another server of the same rack
# Small volumes so that growth (new volumes, spread over the servers) shows on a laptop.
VOLUME_SIZE_LIMIT_MB = 1024
GRPC_OFFSET = 10_000  # weed's own convention: each gRPC port is its HTTP port + 10000
RESTART_DELAY = 1.0
RESTART_LIMIT = 5  # restarts within a minute before giving up
# Per machine here; the two API processes and two workers share the cores.
DEFAULT_WEB_CONCURRENCY = 2
DEFAULT_WORKER_CONCURRENCY = 1


def cluster_ports(s3_port: int) -> dict[str, int]:
    """HTTP ports just above the S3 port (gRPC at each + 10000)."""
    ports = {"s3": s3_port, "master": s3_port + 1, "filer": s3_port + 2 + VOLUME_SERVERS}
    for index in range(VOLUME_SERVERS):
        ports[f"volume{index + 1}"] = s3_port + 2 + index
    return ports


def _grpc(port: int) -> str:
    return f"-port.grpc={port + GRPC_OFFSET}"


def seaweedfs_commands(s3_port: int, s3_config: Path) -> list[tuple[str, list[str | Path]]]:
    """(name, argv) of every SeaweedFS node, in start order; deploy/systemd/ mirrors these."""
    ports = cluster_ports(s3_port)
    master = f"127.0.0.1:{ports['master']}"
    weed: list[str | Path] = [servers.weed_binary(), "-logtostderr=true"]
    local = ["-ip=127.0.0.1", "-ip.bind=127.0.0.1"]
    # fmt: off
    commands: list[tuple[str, list[str | Path]]] = [
        ("master", [
            *weed, "master", *local, f"-port={ports['master']}", _grpc(ports["master"]),
            f"-mdir={CLUSTER_DIR / 'master'}", f"-defaultReplication={REPLICATION}",
            f"-volumeSizeLimitMB={VOLUME_SIZE_LIMIT_MB}", "-telemetry=false",
        ]),
    ]
    for index in range(1, VOLUME_SERVERS + 1):
        port = ports[f"volume{index}"]
        commands.append((f"volume{index}", [
            *weed, "volume", *local, f"-port={port}", _grpc(port),
            f"-dir={CLUSTER_DIR / f'volume{index}'}", "-max=0", f"-master={master}",
        ]))
    commands.append(("filer", [
        *weed, "filer", *local, f"-port={ports['filer']}", _grpc(ports["filer"]),
        f"-master={master}", f"-defaultStoreDir={CLUSTER_DIR / 'filer'}",
        "-s3", f"-s3.port={s3_port}", f"-s3.port.grpc={s3_port + GRPC_OFFSET}",
        f"-s3.config={s3_config}", "-s3.port.iceberg=0", "-s3.port.lance=0",
        "-iam=false", "-webdav=false",
    ]))
    # fmt: on
    return commands


def app_commands(port: int, worker_concurrency: int) -> list[tuple[str, list[str | Path]]]:
    """(name, argv) of the service's processes; the Procfile and deploy/systemd/ mirror these."""
    return [
        ("api1", ds.api_command(port)),
        ("api2", ds.api_command(port + 1)),
        ("delivery", ds.api_command(port + 2, role="delivery")),
        ("worker1", ds.transform_worker_command(worker_concurrency, node="worker1@%h")),
        ("worker2", ds.transform_worker_command(worker_concurrency, node="worker2@%h")),
        ("webhook_worker", ds.webhook_worker_command()),
        ("beat", ds.beat_command(CLUSTER_DIR / "celerybeat-schedule")),
    ]


def master_nodes(master_port: int) -> int:
    """How many volume servers the master sees (0 if it does not answer)."""
    try:
        url = f"http://127.0.0.1:{master_port}/dir/status"
        with urllib.request.urlopen(url, timeout=2) as response:
            topology = json.load(response)["Topology"]
    except (OSError, ValueError, KeyError):
        return 0
    return sum(
        len(rack.get("DataNodes") or [])
        for center in topology.get("DataCenters") or []
        for rack in center.get("Racks") or []
    )


@dataclass
class Node:
    name: str
    cmd: list[str | Path]
    child: processes.Child
    logged: bool  # output to a file (SeaweedFS) rather than prefixed on stdout


class Cluster:
    def __init__(self, services: servers.Services, child_env: dict[str, str], port: int) -> None:
        self.services = services
        self.child_env = child_env
        self.port = port
        self.nodes: dict[str, Node] = {}

    def start(self, name: str, cmd: list[str | Path], *, logged: bool = False) -> processes.Child:
        log_path = CLUSTER_DIR / f"{name}.log" if logged else None
        if log_path is not None and log_path.exists():
            # The previous run's log is kept, so a crash's last lines survive its restart.
            log_path.rename(log_path.with_suffix(".previous.log"))
        env = self.child_env
        if name == "webhook_worker":
            env = {**env, **ds.webhook_worker_environment()}
        child = processes.spawn(name, cmd, child_env=env, log_path=log_path)
        if name.startswith(("master", "volume", "filer", "pg_")):
            child.stop_timeout = servers.SEAWEEDFS_STOP_TIMEOUT
            self.services.processes.append(child)
        else:
            self.services.apps.append(child)
        self.nodes[name] = Node(name, cmd, child, logged)
        return child

    def restart(self, node: Node) -> None:
        group = self.services.processes if node.child in self.services.processes else None
        (group if group is not None else self.services.apps).remove(node.child)
        # What is left of its group (a prefork worker's children) goes with it.
        processes.stop_children([node.child])
        self.start(node.name, node.cmd, logged=node.logged)

    def pid(self, name: str) -> int:
        return self.nodes[name].child.proc.pid

    def write_map(self) -> None:
        volumes = [f"volume{i}" for i in range(1, VOLUME_SERVERS + 1)]
        mapping = {
            "api": [
                {"port": self.port, "pid": self.pid("api1")},
                {"port": self.port + 1, "pid": self.pid("api2")},
            ],
            "delivery": [{"port": self.port + 2, "pid": self.pid("delivery")}],
            "worker": [self.pid("worker1"), self.pid("worker2")],
            "webhook_worker": [self.pid("webhook_worker")],
            "beat": self.pid("beat"),
            "postgres": {
                name.removeprefix("pg_"): self.pid(name)
                for name in self.nodes
                if name.startswith("pg_")
            },
            "seaweedfs": {
                "master": self.pid("master"),
                "volume": [self.pid(name) for name in volumes],
                "filer": self.pid("filer"),
            },
        }
        tmp = CLUSTER_FILE.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(mapping, indent=2) + "\n")
        os.replace(tmp, CLUSTER_FILE)

    def supervise(self) -> int:
        """Start again whatever dies, as systemd would, until a signal interrupts us; give up
        on a process that keeps dying (as systemd's StartLimitBurst does)."""
        restarts: dict[str, list[float]] = {}
        while True:
            time.sleep(0.2)
            for node in list(self.nodes.values()):
                code = node.child.proc.poll()
                if code is None:
                    continue
                recent = [t for t in restarts.get(node.name, []) if t > time.monotonic() - 60]
                restarts[node.name] = [*recent, time.monotonic()]
                if len(recent) >= RESTART_LIMIT:
                    if node.child.log_path is not None:
                        processes.print_tail(node.name, node.child.log_path)
                    processes.log(
                        f"{node.name} died {RESTART_LIMIT + 1} times in a minute; stopping"
                    )
                    return 1
                processes.log(f"{node.name} exited with code {code}; starting it again")
                time.sleep(RESTART_DELAY)
                self.restart(node)
                self.write_map()


def start_seaweedfs(cluster: Cluster, s3_port: int) -> str:
    ports = cluster_ports(s3_port)
    taken = [
        f"{name}={port}"
        for name, port in ports.items()
        for candidate in (port, port + GRPC_OFFSET)
        if not servers.port_is_free(candidate)
    ]
    endpoint = f"http://127.0.0.1:{s3_port}"
    if taken:
        raise processes.ServiceError(
            f"cannot start the SeaweedFS cluster: port(s) in use ({', '.join(taken)}; "
            f"gRPC at each + {GRPC_OFFSET}). Stop what holds them (a `make run` on the same "
            "SEAWEEDFS_S3_PORT?) or choose another SEAWEEDFS_S3_PORT."
        )
    for name in ["master", "filer", *(f"volume{i}" for i in range(1, VOLUME_SERVERS + 1))]:
        (CLUSTER_DIR / name).mkdir(parents=True, exist_ok=True)
    s3_config = servers.write_s3_identities(CLUSTER_DIR)
    commands = seaweedfs_commands(s3_port, s3_config)
    processes.log(
        f"starting SeaweedFS: master :{ports['master']} (replication {REPLICATION}), "
        f"{VOLUME_SERVERS} volume servers, filer :{ports['filer']} with S3 at {endpoint}; "
        f"logs in {CLUSTER_DIR.relative_to(servers.ROOT)}"
    )
    for name, cmd in commands[:-1]:
        cluster.start(name, cmd, logged=True)
    deadline = time.monotonic() + servers.SEAWEEDFS_START_TIMEOUT
    # Replication 001 needs two servers for every write: wait for all three to register.
    while master_nodes(ports["master"]) < VOLUME_SERVERS:
        if time.monotonic() > deadline:
            raise processes.ServiceError(
                f"the SeaweedFS volume servers did not register within "
                f"{servers.SEAWEEDFS_START_TIMEOUT:.0f} s; see {CLUSTER_DIR}"
            )
        time.sleep(0.25)
    name, cmd = commands[-1]
    servers.wait_for_s3(cluster.start(name, cmd, logged=True), endpoint)
    return endpoint


def start_formation(cluster: Cluster) -> str:
    """The formation's processes, supervised like every other node (a killed node comes back
    and rejoins as a standby); its multi-host URL."""
    formation = pgcluster.Formation(ds.positive_int_env("CLUSTER_PG_PORT", 55432))
    formation.prepare()
    processes.log(
        f"starting PostgreSQL as a pg_auto_failover formation: monitor :{formation.port}, "
        f"nodes :{formation.port + 1} and :{formation.port + 2}; logs in "
        f"{CLUSTER_DIR.relative_to(servers.ROOT)}"
    )
    cluster.start("pg_monitor", formation.monitor_command(), logged=True)
    formation.configure_monitor()
    cluster.start("pg_node1", formation.node_command("node1"), logged=True)
    pgcluster.wait_for(lambda: formation.primary() is not None, "a primary")
    cluster.start("pg_node2", formation.node_command("node2"), logged=True)
    formation.wait_healthy()
    return formation.url()


def run(services: servers.Services, postgres: str = "single") -> int:
    port = ds.positive_int_env("PORT", 8000)
    s3_port = ds.positive_int_env("SEAWEEDFS_S3_PORT", servers.DEFAULT_S3_PORT)
    worker_concurrency = ds.positive_int_env("CELERY_CONCURRENCY", DEFAULT_WORKER_CONCURRENCY)
    if servers.env("AWS_S3_ENDPOINT_URL"):
        raise processes.ServiceError(
            "make cluster runs its own SeaweedFS cluster; unset AWS_S3_ENDPOINT_URL "
            "(and set SEAWEEDFS_S3_PORT to move it)"
        )
    for api_port in (port, port + 1, port + 2):
        if not servers.port_is_free(api_port):
            raise processes.ServiceError(
                f"port {api_port} is in use; set PORT (the cluster takes it and the next two)"
            )
    servers.VAR.mkdir(parents=True, exist_ok=True)
    CLUSTER_DIR.mkdir(parents=True, exist_ok=True)
    CLUSTER_FILE.unlink(missing_ok=True)  # only a complete, current map is ever there
    cluster = Cluster(services, {}, port)
    if postgres == "formation":
        database_url = start_formation(cluster)
    else:
        database_url = servers.ensure_postgres(services)
    redis_url = servers.ensure_redis(services)
    endpoint = start_seaweedfs(cluster, s3_port)
    region = servers.env("AWS_S3_REGION_NAME") or servers.DEFAULT_REGION
    bucket = servers.env("AWS_STORAGE_BUCKET_NAME") or servers.DEFAULT_BUCKET
    test_bucket = servers.env("TEST_AWS_STORAGE_BUCKET_NAME") or servers.DEFAULT_TEST_BUCKET
    client = servers.s3_client(endpoint, servers.DEV_ACCESS_KEY, servers.DEV_SECRET_KEY, region)
    servers.ensure_buckets(client, [bucket, test_bucket], region, retry_for=15.0)
    servers.ensure_cors(client, [bucket, test_bucket], servers.cors_origins())
    resolved = {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "AWS_S3_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": servers.DEV_ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": servers.DEV_SECRET_KEY,
        "AWS_STORAGE_BUCKET_NAME": bucket,
        "AWS_S3_REGION_NAME": region,
    }
    servers.write_env_file(resolved)
    cluster.child_env = ds.app_environment(resolved)
    cluster.child_env.setdefault("WEB_CONCURRENCY", str(DEFAULT_WEB_CONCURRENCY))
    # The URLs the APIs sign name the delivery server, unless the caller chose a host (a CDN).
    if not cluster.child_env.get("SERVICE_DELIVERY_BASE_URL"):
        cluster.child_env["SERVICE_DELIVERY_BASE_URL"] = f"http://127.0.0.1:{port + 2}"
    code = ds.run_migrations(services, cluster.child_env)
    if code != 0:
        return code
    ds.banner(
        resolved,
        f"http://127.0.0.1:{port}/ and http://127.0.0.1:{port + 1}/",
        cluster.child_env["SERVICE_DELIVERY_BASE_URL"],
    )
    for name, cmd in app_commands(port, worker_concurrency):
        cluster.start(name, cmd)
    cluster.write_map()
    processes.log(f"cluster up; roles and pids in {CLUSTER_FILE.relative_to(servers.ROOT)}")
    return cluster.supervise()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.devcluster", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--postgres",
        choices=["single", "formation"],
        default="single",
        help="one PostgreSQL as `make run` finds it, or a pg_auto_failover formation",
    )
    args = parser.parse_args(argv)
    services = servers.Services()
    processes.set_signal_handlers(processes.raise_interrupted)
    try:
        return run(services, args.postgres)
    except processes.Interrupted as exc:
        processes.log(f"{signal.Signals(exc.signum).name} received; stopping")
        return 0
    except processes.ServiceError as exc:
        processes.log(f"error: {exc}")
        return 1
    finally:
        processes.set_signal_handlers(signal.SIG_IGN)
        services.stop()
        CLUSTER_FILE.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
