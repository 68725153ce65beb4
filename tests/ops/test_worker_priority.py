"""The transform worker's pool processes run below the API's CPU priority: as `make run`
starts it (a session of its own), each pool process and the session's scheduling group
(autogroup) are at SERVICE_WORKER_NICE, while the worker's parent, which takes the broker's
messages, keeps its priority. A worker in a session it shares (a shell's, a test runner's)
leaves that session's group alone."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest

from scripts.devservices import transform_worker_command
from tests.servers import ROOT


def nice_of(pid: int) -> int:
    # /proc/<pid>/stat: the 19th field is the nice value (after "(comm)", field 3 is the 1st).
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16])


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def worker_environment() -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
        # A queue of its own: this worker never takes another test's messages.
        "SERVICE_TRANSFORM_QUEUE": f"priority-{secrets.token_hex(4)}",
        "SERVICE_WORKER_NICE": "10",
    }


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_the_transform_workers_pool_processes_yield_the_cpu() -> None:
    env = worker_environment()
    command = [str(part) for part in transform_worker_command(2, node="priority@%h")]
    command[command.index("-Q") + 1] = env["SERVICE_TRANSFORM_QUEUE"]
    worker = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # as `make run` starts it
    )
    try:
        deadline = time.monotonic() + 90
        pool: list[int] = []
        while time.monotonic() < deadline and worker.poll() is None:
            pool = [pid for pid in children_of(worker.pid) if nice_of(pid) == 10]
            if len(pool) == 2:
                break
            time.sleep(0.3)
        assert len(pool) == 2, "the pool processes did not lower their priority"
        assert nice_of(worker.pid) == 0
        autogroup = Path(f"/proc/{pool[0]}/autogroup")
        if autogroup.exists():
            assert autogroup.read_text().split()[-1] == "10"
    finally:
        stop(worker)


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="no autogroups here")
def test_a_worker_in_a_shared_session_leaves_the_sessions_group_alone() -> None:
    """A solo worker started by a shell that leads the session (as a test runner starts
    one): the worker is niced, the shell's scheduling group is not."""
    env = worker_environment()
    command = [str(part) for part in transform_worker_command(1, node="priority-solo@%h")]
    command[command.index("-Q") + 1] = env["SERVICE_TRANSFORM_QUEUE"]
    command += ["--pool", "solo"]
    shell = subprocess.Popen(
        ["sh", "-c", '"$@"; exit', "sh", *command],  # the shell waits: the worker's parent
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        workers: list[int] = []
        while time.monotonic() < deadline and shell.poll() is None:
            workers = [pid for pid in children_of(shell.pid) if nice_of(pid) == 10]
            if workers:
                break
            time.sleep(0.3)
        assert workers, "the solo worker did not lower its priority"
        assert Path(f"/proc/{shell.pid}/autogroup").read_text().split()[-1] == "0"
    finally:
        stop(shell)
