"""Child processes of the dev scripts (``devservices.py``, ``devcluster.py``, the benches).

Each child runs in its own session, so the terminal's Ctrl-C does not reach it behind our
back and stopping its process group leaves no grandchild behind. Its output goes to a log
file or, line by line, to our stdout with its name in front. A signal to the main thread
raises ``Interrupted``, which unwinds whatever is starting straight to the caller's cleanup.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent

STOP_TIMEOUT = 10.0
HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_print_lock = threading.Lock()


class ServiceError(Exception):
    """A service cannot be reached or started; the message says what to do about it."""


class Interrupted(BaseException):
    """SIGINT/SIGTERM/SIGHUP arrived in the main thread.

    A BaseException so that no ``except Exception`` on the way (boto3 retries, psycopg)
    swallows it: it must reach the cleanup in ``main``.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def log(message: str) -> None:
    # stderr, so that `exec -- cmd | ...` pipes nothing but the command's own output.
    with _print_lock:
        print(f"devservices | {message}", file=sys.stderr, flush=True)


def emit(name: str, line: str, stream: TextIO | None = None) -> None:
    with _print_lock:
        out = stream or sys.stdout
        out.write(f"{name} | {line.rstrip()}\n")
        out.flush()


def print_block(text: str) -> None:
    """Print ``text`` to stdout whole, never interleaved with a child's lines."""
    with _print_lock:
        print(text, flush=True)


def print_tail(name: str, path: Path, lines: int = 40) -> None:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return
    for line in text.splitlines()[-lines:]:
        emit(name, line, sys.stderr)


@dataclass
class Child:
    """A process started in its own session, so it and everything it forks form one process
    group: the terminal's Ctrl-C does not reach it behind our back, and stopping the group
    leaves no grandchild (API and celery workers) behind."""

    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path | None = None
    reader: threading.Thread | None = None
    stop_timeout: float = STOP_TIMEOUT

    def group_alive(self) -> bool:
        self.proc.poll()  # reap the leader, or a zombie would keep the group "alive"
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signum)


def spawn(
    name: str,
    cmd: Sequence[str | Path],
    *,
    child_env: dict[str, str] | None = None,
    log_path: Path | None = None,
    cwd: Path = ROOT,
) -> Child:
    """Start ``cmd`` in a new session, its output going to ``log_path`` if given, else line
    by line to our stdout, prefixed with ``name``."""
    argv = [str(part) for part in cmd]
    try:
        if log_path is not None:
            with log_path.open("wb") as log_file:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    cwd=cwd,
                    env=child_env,
                    start_new_session=True,
                )
            return Child(name, proc, log_path=log_path)
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=child_env,
            start_new_session=True,
        )
    except OSError as exc:
        raise ServiceError(f"cannot start {name} ({argv[0]}): {exc}") from exc
    child = Child(name, proc)
    child.reader = threading.Thread(target=_pump, args=(name, proc), name=name, daemon=True)
    child.reader.start()
    return child


def _pump(name: str, proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdout is not None
    with proc.stdout:
        for raw in iter(proc.stdout.readline, b""):
            emit(name, raw.decode("utf-8", errors="replace"))


def stop_children(children: Sequence[Child]) -> None:
    """SIGTERM every group at once, give each its ``stop_timeout``, then SIGKILL the rest."""
    pending = [child for child in children if child.group_alive()]
    for child in pending:
        child.signal_group(signal.SIGTERM)
    started = time.monotonic()
    killed: set[int] = set()
    give_up = started + max((child.stop_timeout for child in pending), default=0) + 5
    while pending and time.monotonic() < give_up:
        elapsed = time.monotonic() - started
        for child in pending:
            if elapsed >= child.stop_timeout and child.proc.pid not in killed:
                log(f"{child.name} did not stop within {child.stop_timeout:.0f} s; killing it")
                child.signal_group(signal.SIGKILL)
                killed.add(child.proc.pid)
        time.sleep(0.1)
        pending = [child for child in pending if child.group_alive()]
    for child in pending:
        log(f"{child.name} (process group {child.proc.pid}) is still alive after SIGKILL")
    for child in children:
        if child.reader is not None:
            child.reader.join(timeout=2)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def set_signal_handlers(handler: Callable[[int, FrameType | None], Any] | int) -> None:
    for signum in HANDLED_SIGNALS:
        signal.signal(signum, handler)


def raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)
