"""The transform worker's pool processes run below the API's CPU priority: as `make run`
starts it (a session of its own), each pool process and the session's scheduling group
(autogroup) are at SERVICE_WORKER_NICE, while the worker's parent, which takes the broker's
messages, keeps its priority."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

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


def test_the_transform_workers_pool_processes_yield_the_cpu() -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
        # A queue of its own: this worker never takes another test's messages.
        "SERVICE_TRANSFORM_QUEUE": f"priority-{secrets.token_hex(4)}",
        "SERVICE_WORKER_NICE": "10",
    }
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
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
