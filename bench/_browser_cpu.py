"""Where the browser bench's CPU goes: the processes under the browser (Chromium's by kind,
the Node driver), the store's (found by its port, and pinned to a core of its own when
asked), and one upload's wall time beside the CPU the store and the machine spent meanwhile."""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench import _common as bench


def tree_cpu(root: int) -> Counter[str]:
    """CPU seconds so far of ``root`` and its descendants, by kind: Chromium's browser,
    renderer, network service and other processes; the Node driver."""
    stats = list(bench.process_stats())
    parents = {stat.pid: stat.parent for stat in stats}
    used = {stat.pid: stat.cpu for stat in stats}
    totals: Counter[str] = Counter()
    for pid, seconds in used.items():
        at = pid
        while at not in (root, 0, 1) and at in parents:
            at = parents[at]
        if at != root:
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        totals[process_kind(command)] += seconds
    return totals


def store_pid(endpoint: str | None) -> int | None:
    """The process of this checkout's store: the one listening on its S3 endpoint's port (other
    checkouts on the machine run stores of their own, whose CPU is not this upload's)."""
    port = urlsplit(endpoint or "").port
    return bench.listener_pid(port) if port else None


def pin_store(pid: int, core: int) -> set[int]:
    """Every thread of the store on ``core``; this process, and so the API, the browser and
    the Python client it starts, on the others. Returns the store's cores before."""
    others = os.sched_getaffinity(0) - {core}
    if not others or core not in os.sched_getaffinity(0):
        raise SystemExit(f"--store-core {core}: needs that core and at least one other")
    before = os.sched_getaffinity(pid)
    set_affinity(pid, {core})
    os.sched_setaffinity(0, others)
    return before


def set_affinity(pid: int, cores: set[int]) -> None:
    """Every thread of ``pid`` on ``cores`` (a store that outlives the bench gets its own
    cores back at the end)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(task.name), cores)


@dataclass
class Side:
    """What one upload cost: wall seconds, and the CPU seconds the store and the whole
    machine spent meanwhile."""

    seconds: float
    store_cpu: float
    busy: float

    def cores(self) -> float:
        return self.busy / self.seconds


def measured(upload: Callable[[], Any], store: int | None) -> tuple[Any, Side]:
    """``upload``'s result and cost; ``store`` is the store's process (None: not on this
    machine, its CPU counted as 0)."""
    store_cpu = (lambda: bench.process_cpu(store)) if store else (lambda: 0.0)
    before, busy, started = store_cpu(), bench.machine_busy(), time.perf_counter()
    result = upload()
    seconds = time.perf_counter() - started
    return result, Side(seconds, store_cpu() - before, bench.machine_busy() - busy)


def process_kind(command: list[bytes]) -> str:
    if not command or b"chromium" not in command[0]:
        return "node driver"
    flags = b" ".join(command)
    if b"--type=renderer" in flags:
        return "renderer"
    if b"NetworkService" in flags:
        return "network"
    if b"--type=" not in flags:
        return "browser"
    return "other"
