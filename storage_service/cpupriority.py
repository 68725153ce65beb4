"""Image work yields the CPU to the API: each process of a Celery pool that runs the
transforms lowers its own CPU priority when it starts (Celery's ``worker_process_init``
signal), by SERVICE_WORKER_NICE.

A process's nice value only weighs against the processes of its own scheduling group. Linux
groups processes by session when autogrouping is on (``/proc/sys/kernel/sched_autogroup_enabled``,
the default of most distributions), and every server `make run`, `make cluster` and the
benches start is a session of its own, so the worker's session (its autogroup) is given the
same nice value when the session is the worker's alone: without it, a worker at nice 10 would
still take an equal share of the CPU from an API in another session. A worker started from an
interactive shell shares the shell's session, which is left alone: start it with ``setsid``.
Under cgroups with the CPU controller (systemd units), autogroups do not apply and the units'
``CPUWeight=`` says the same (deploy/systemd).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from billiard import current_process
from django.conf import settings

AUTOGROUP = Path("/proc/self/autogroup")


def lower_worker_priority(**_: Any) -> None:
    """Connected to ``worker_process_init``: runs in each pool process as it starts: a prefork
    pool's children, which run the tasks, and not its parent, which takes messages from the
    broker and so stays prompt (a solo pool's one process does both). A thread pool (the
    webhook worker) has no pool processes and keeps its priority."""
    nice = settings.SERVICE_WORKER_NICE
    if nice <= 0:
        return
    now = os.nice(0)
    if now < nice:
        os.nice(nice - now)
    if AUTOGROUP.exists() and worker_leads_its_session():
        # Only a higher value may be set without privileges; a group already at or above it
        # is left as it is.
        with contextlib.suppress(OSError, ValueError):
            current = int(AUTOGROUP.read_text().rsplit("nice", 1)[1])
            if current < nice:
                AUTOGROUP.write_text(str(nice))


def worker_leads_its_session() -> bool:
    """Whether the session is the worker's alone: its leader is the worker's main process,
    which is this process's parent in a prefork pool process and this process itself in a
    solo pool. Never a shell, a test runner or a process manager that started others too."""
    leader = os.getsid(0)
    if current_process().name == "MainProcess":  # a solo pool: the worker itself
        return leader == os.getpid()
    return leader == os.getppid()
