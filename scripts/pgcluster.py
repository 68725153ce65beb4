"""PostgreSQL as a pg_auto_failover formation: a monitor, a primary and a synchronous standby.

Used by `make cluster` (scripts/devcluster.py) and `make drill-db` (drills/database.py):

- the monitor on ``port``, the two nodes on ``port + 1`` and ``port + 2``, each a
  ``pg_autoctl`` process (Debian's ``postgresql-15-auto-failover``) with its own data
  directory under ``var/pgcluster/``, run as the ``postgres`` user when we are root (PostgreSQL
  refuses to run as root);
- one standby, so pg_auto_failover replicates synchronously (``synchronous_standby_names =
  'ANY 1 (...)'``, replication quorum on): a commit is on both machines before it is
  acknowledged. When the standby is lost the primary goes on alone (``wait_primary``):
  pg_auto_failover's choice of availability, which the drill shows;
- the monitor's health checks are tightened so that a dead primary is noticed and its standby
  promoted within seconds (the defaults take 20 to 30 s);
- the service connects with :meth:`Formation.url`, both nodes with
  ``target_session_attrs=read-write``: libpq finds whichever is the primary.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from scripts import processes, servers

PG_AUTOCTL = "pg_autoctl"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
RUN_AS = "postgres"
DATABASE = "storage_cluster"
NODES = ("node1", "node2")
START_TIMEOUT = 180.0
# The monitor's health checks (milliseconds): a node that misses them for this long is
# unhealthy, and an unhealthy primary with a healthy standby is failed over.
MONITOR_SETTINGS = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "4000",
    # How long the monitor waits for an unreachable primary to demote itself before promoting
    # its standby (30 s by default): a primary cut off from the monitor stops taking writes
    # by then, since its synchronous standby no longer acknowledges them.
    "pgautofailover.primary_demote_timeout": "5000",
}


def installed() -> bool:
    return shutil.which(PG_AUTOCTL) is not None and (PG_BIN / "postgres").exists()


@dataclass
class Formation:
    port: int
    root: Path = servers.VAR / "pgcluster"

    @property
    def monitor_port(self) -> int:
        return self.port

    def node_port(self, name: str) -> int:
        return self.port + 1 + NODES.index(name)

    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{self.node_port(name)}" for name in NODES)
        return f"postgresql://postgres@{hosts}/{DATABASE}?target_session_attrs=read-write"

    def node_url(self, name: str, database: str = DATABASE) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.node_port(name)}/{database}"

    def monitor_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.monitor_port}/pg_auto_failover"

    def _as_postgres(self, argv: list[str]) -> list[str | Path]:
        # Absolute paths: a supervisor may start us with an empty environment.
        env = [
            "/usr/bin/env",
            f"HOME={self.root}",
            f"XDG_CONFIG_HOME={self.root / 'config'}",
            f"XDG_DATA_HOME={self.root / 'data'}",
            f"PATH={PG_BIN}:/usr/bin:/bin",
            # initdb takes its encoding from the locale: UTF8, not SQL_ASCII.
            "LC_ALL=C.UTF-8",
        ]
        runuser = shutil.which("runuser") or "/usr/sbin/runuser"
        prefix = [runuser, "-u", RUN_AS, "--"] if os.geteuid() == 0 else []
        return [*prefix, *env, *argv]

    def _command(self, pgdata: Path, create: list[str]) -> list[str | Path]:
        """``pg_autoctl create ... --run`` the first time, ``pg_autoctl run`` after (a node
        started again, as by its supervisor, keeps its data and its place)."""
        script = (
            f'if [ -f "{pgdata}/postgresql.conf" ]; then exec {PG_AUTOCTL} run --pgdata "{pgdata}";'
            f" else exec {' '.join(create)} --run; fi"
        )
        return self._as_postgres(["sh", "-c", script])

    def monitor_command(self) -> list[str | Path]:
        pgdata = self.root / "monitor"
        create = [
            PG_AUTOCTL,
            "create monitor",
            f"--pgdata {pgdata}",
            f"--pgport {self.monitor_port}",
            "--hostname 127.0.0.1 --auth trust --no-ssl",
        ]
        return self._command(pgdata, create)

    def node_command(self, name: str) -> list[str | Path]:
        pgdata = self.root / name
        create = [
            PG_AUTOCTL,
            "create postgres",
            f"--pgdata {pgdata}",
            f"--pgport {self.node_port(name)}",
            f"--name {name} --dbname {DATABASE}",
            "--hostname 127.0.0.1 --auth trust --no-ssl --replication-quorum true",
            f"--monitor '{self.monitor_url().replace('postgres@', 'autoctl_node@')}"
            "?sslmode=disable'",
        ]
        return self._command(pgdata, create)

    def prepare(self) -> None:
        if not installed():
            raise processes.ServiceError(
                "pg_autoctl is not installed: `make cluster` installs it "
                "(apt-get install -y postgresql-15-auto-failover)"
            )
        taken = [p for p in range(self.port, self.port + 3) if not servers.port_is_free(p)]
        if taken:
            raise processes.ServiceError(
                f"the PostgreSQL formation's ports are in use ({taken}); set CLUSTER_PG_PORT"
            )
        for name in ("config", "data"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            for path in (self.root, self.root / "config", self.root / "data"):
                shutil.chown(path, RUN_AS)

    def configure_monitor(self) -> None:
        wait_for(lambda: answers(self.monitor_url()), "the monitor to answer")
        with psycopg.connect(self.monitor_url(), autocommit=True) as conn:
            for name, value in MONITOR_SETTINGS.items():
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")

    def states(self) -> dict[str, tuple[str, str]]:
        """Each node's (reported, assigned) state, as the monitor has them."""
        try:
            with psycopg.connect(self.monitor_url(), connect_timeout=2) as conn:
                rows = conn.execute(
                    "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node"
                ).fetchall()
        except psycopg.Error:
            return {}
        return {text(name): (text(reported), text(goal)) for name, reported, goal in rows}

    def primary(self) -> str | None:
        for name, (reported, goal) in self.states().items():
            if reported in {"primary", "wait_primary", "single"} and goal == reported:
                return name
        return None

    def wait_healthy(self, timeout: float = START_TIMEOUT) -> None:
        """Until one node is primary and the other its secondary. A new standby's base backup
        waits for a checkpoint on the primary, spread over minutes by default: ask for one."""

        def healthy() -> bool:
            states = self.states()
            reported = sorted(reported for reported, _ in states.values())
            if len(states) == len(NODES) and reported == ["primary", "secondary"]:
                return True
            primary = self.primary()
            if primary is not None:
                try:
                    with psycopg.connect(self.node_url(primary), connect_timeout=2) as conn:
                        conn.execute("CHECKPOINT")
                except psycopg.Error:
                    pass
            return False

        wait_for(healthy, "a primary and a synchronous secondary", timeout=timeout)


def text(value: object) -> str:
    """A text column: bytes from a database created before its encoding was set (SQL_ASCII)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


def wait_for(check: Callable[[], bool], what: str, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise processes.ServiceError(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(1.0)
