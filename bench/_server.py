"""The API server under test, started as ``scripts/devservices.py run`` starts it, and the
CPU it and the machine use meanwhile."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench._env import ROOT, SETTINGS_MODULE, log, server_environment


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) or 1


def web_workers() -> int:
    """The API server's worker processes, as storage_service/serving.py counts them."""
    from storage_service.serving import web_workers

    return web_workers()


def worker_line(role: str = "api") -> str:
    from storage_service.serving import web_threads

    return f"granian WSGI, {web_threads(role)} thread(s) each"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    base_url: str
    port: int
    workers: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    app: str = "storage_service.wsgi:application"
    role: str = "api"

    def describe(self) -> str:
        return (
            f"{self.app} ({self.role} role), {self.workers} workers "
            f"({worker_line(self.role)}, from "
            f"storage_service/serving.py as `make run`), {self.base_url}"
        )

    def cpu(self) -> CpuTimes:
        return cpu_times(self.proc.pid)


@dataclass(frozen=True)
class CpuTimes:
    """CPU seconds used so far: the API server (main process and workers), every PostgreSQL
    process, and the whole machine (all cores, not idle). Differences over a window give cores
    used."""

    server: float
    postgres: float
    machine: float
    # Each PostgreSQL process's CPU so far, by pid (from cpu_times). A backend that exits
    # takes its whole past CPU out of the sum, so a difference of sums can even be negative
    # (a connection pool closing between two loads); a difference by process counts only what
    # the processes of the later moment used since the earlier one.
    postgres_by_pid: dict[int, float] | None = field(default=None, compare=False, repr=False)

    def __sub__(self, other: CpuTimes) -> CpuTimes:
        postgres = self.postgres - other.postgres
        if self.postgres_by_pid is not None and other.postgres_by_pid is not None:
            before = other.postgres_by_pid
            postgres = sum(
                max(0.0, cpu - before.get(pid, 0.0)) for pid, cpu in self.postgres_by_pid.items()
            )
        return CpuTimes(self.server - other.server, postgres, self.machine - other.machine)


NOISY_CORES = 0.25


def cpu_note(used: CpuTimes, client: float, seconds: float) -> str:
    """One line on where the machine's CPU went over ``seconds``, with a warning when other
    processes (not the client, the API server or PostgreSQL) took a noticeable share of it."""
    other = max(0.0, used.machine - used.server - used.postgres - client) / seconds
    line = (
        f"CPU cores used while measuring (of {cpu_count()}): client {client / seconds:.2f}, "
        f"server {used.server / seconds:.2f}, postgres {used.postgres / seconds:.2f}, "
        f"other {other:.2f}"
    )
    if other > NOISY_CORES:
        line += (
            f"\nWARNING: other processes used {other:.2f} cores during the measurement; "
            "these figures are noisy. Rerun on a quiet machine."
        )
    return line


@dataclass(frozen=True)
class ProcessStat:
    """One process as /proc/<pid>/stat shows it."""

    pid: int
    name: str  # the command's name (comm), e.g. "postgres"
    parent: int
    group: int  # its process group
    cpu: float  # CPU seconds so far, all its threads (user + system)


def process_stat(pid: int) -> ProcessStat | None:
    """The process ``pid`` now; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The name is in parentheses and may hold spaces and parentheses itself.
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return ProcessStat(pid, name, int(fields[1]), int(fields[2]), cpu)


def process_stats() -> Iterator[ProcessStat]:
    """Every process of the machine now (one exiting meanwhile is left out)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := process_stat(int(entry.name))) is not None:
            yield stat


def cpu_times(server_group: int) -> CpuTimes:
    server_cpu = 0.0
    postgres: dict[int, float] = {}
    for process in process_stats():
        if process.group == server_group:  # its own process group: main process and workers
            server_cpu += process.cpu
        elif process.name == "postgres":
            postgres[process.pid] = process.cpu
    return CpuTimes(server_cpu, sum(postgres.values()), machine_busy(), postgres)


def machine_busy() -> float:
    """CPU seconds so far that the machine's cores spent on anything but idling."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")  # not idle, iowait


def listener_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1:``port`` (or any address), if this user can see it:
    its listening socket's inode in /proc/net/tcp*, then the process holding that inode."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                # local address "ADDR:PORT" in hex; state 0A is LISTEN
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return int(entry.name)
    return None


def process_cpu(pid: int) -> float:
    """CPU seconds one process (all its threads) has used so far; 0 once it is gone."""
    stat = process_stat(pid)
    return 0.0 if stat is None else stat.cpu


@contextlib.contextmanager
def api_server(
    url: str,
    *,
    bench_routes: bool = False,
    app: str = "storage_service.wsgi:application",
    settings_module: str = SETTINGS_MODULE,
    ready_path: str = "/v1/me",
    role: str = "api",
) -> Iterator[Server]:
    """The API server as ``scripts/devservices.py run`` starts it, on a free 127.0.0.1 port.

    Workers and threads come from storage_service/serving.py, as for ``make run``; the
    command line is devservices' (no access log: the service logs each request itself, as one
    JSON line). Here its output goes to a temporary file, shown if it fails. ``app`` and
    ``settings_module`` serve another app (the benchmark's references, bench/reference/) with
    the very same server settings. ``role="delivery"``: a delivery server (only delivery URLs
    and the probes), as ``make run`` starts one beside the API.
    """
    port = free_port()
    workers = web_workers()
    extra = {
        "SERVICE_BENCH_ROUTES": "true" if bench_routes else "false",
        "WEB_CONCURRENCY": str(workers),  # read by storage_service/serving.py
        # The limiter stays on (its Redis round trip is part of every request's cost), with
        # budgets no benchmark reaches.
        "SERVICE_RATE_LIMIT_READS_PER_MINUTE": str(10**9),
        "SERVICE_RATE_LIMIT_WRITES_PER_MINUTE": str(10**9),
        "SERVICE_RATE_LIMIT_TOKEN_READS_PER_MINUTE": str(10**9),
        "SERVICE_RATE_LIMIT_TOKEN_WRITES_PER_MINUTE": str(10**9),
        "DJANGO_SETTINGS_MODULE": settings_module,
        # The reference app lives in bench/.
        "PYTHONPATH": os.pathsep.join([str(ROOT / "bench"), str(ROOT)]),
    }
    log_dir = Path(tempfile.mkdtemp(prefix="bench-api-"))
    log_path = log_dir / "api.log"
    # `make run`'s own command line: every setting but the address is in storage_service/serving.py.
    from scripts.devservices import api_command

    cmd = [str(part) for part in api_command(port, app=app, role=role)]
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=server_environment(url, **extra),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopping it stops the workers
        )
    server = Server(f"http://127.0.0.1:{port}", port, workers, proc, log_path, app, role)
    try:
        _wait_ready(server, ready_path)
        log(f"started {server.describe()}")
        yield server
    finally:
        _stop(proc)
        with contextlib.suppress(OSError):
            log_path.unlink()
            log_dir.rmdir()


def _wait_ready(server: Server, ready_path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if server.proc.poll() is not None:
            _print_log(server.log_path)
            raise SystemExit(f"the API server exited with code {server.proc.returncode}")
        try:
            with urllib.request.urlopen(f"{server.base_url}{ready_path}", timeout=2):
                pass
            return
        except urllib.error.HTTPError:
            return  # 401 without a key: the application answers
        except OSError:
            pass
        if time.monotonic() > deadline:
            _print_log(server.log_path)
            raise SystemExit(f"the API server did not answer within {timeout:.0f} s")
        time.sleep(0.2)


def _print_log(path: Path, lines: int = 40) -> None:
    with contextlib.suppress(OSError):
        for line in path.read_text(errors="replace").splitlines()[-lines:]:
            print(f"api | {line}", file=sys.stderr)


def _stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    # Workers outlive the master only briefly; make sure none is left in the group.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
