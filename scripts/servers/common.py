"""What the dev servers share: their defaults, the environment's say, free ports, and the
record of what this invocation started (``Services``)."""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from scripts.processes import ROOT, Child, log, stop_children

VAR = ROOT / "var"
ENV_FILE = VAR / "services.env"
# Not resolved: .venv/bin/python is a symlink to the base interpreter, and the venv's own
# scripts (python, celery, weed) live next to the link, not next to its target.
VENV_BIN = Path(sys.executable).parent

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/storage_service"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_BUCKET = "storage"
DEFAULT_TEST_BUCKET = "storage-test"
DEFAULT_REGION = "us-east-1"
DEFAULT_S3_PORT = 8333
# Credentials of the local SeaweedFS only. They protect nothing but a developer's machine and
# must never become a production default.
DEV_ACCESS_KEY = "storage-dev"
DEV_SECRET_KEY = "storage-dev-secret-0123456789"
# Port of the embedded Redis when 6379 has nothing usable: a port of our own, so a later
# invocation never mistakes it for a system Redis and uses one that may vanish under it.
EMBEDDED_REDIS_PORT = 6390

SEAWEEDFS_START_TIMEOUT = 60.0
SEAWEEDFS_STOP_TIMEOUT = 5.0
REDIS_START_TIMEOUT = 10.0
ENV_KEYS = (
    "DATABASE_URL",
    "REDIS_URL",
    "AWS_S3_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_STORAGE_BUCKET_NAME",
    "AWS_S3_REGION_NAME",
)


def env(name: str) -> str | None:
    """A variable from the environment; empty counts as unset, as in the Django settings."""
    value = os.environ.get(name)
    return value or None


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR so a socket in TIME_WAIT from a previous run does not count as taken;
        # on Linux a listening socket still makes the bind fail.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def pgserver_handles(pgdata: Path) -> list[int]:
    """Pids of the processes holding a pgserver handle on ``pgdata`` (its own bookkeeping)."""
    try:
        pids = json.loads((pgdata / ".handle_pids.json").read_text())
    except (OSError, ValueError):
        return []
    return [pid for pid in pids if isinstance(pid, int)] if isinstance(pids, list) else []


@dataclass
class Services:
    """What this invocation started, so that exactly that is stopped at the end: the servers
    and, once they answer, the app's processes."""

    processes: list[Child] = field(default_factory=list)  # redis-server, weed
    apps: list[Child] = field(default_factory=list)  # migrate, the API, celery
    pg_server: Any = None  # pgserver.PostgresServer, imported lazily

    def stop(self) -> None:
        # Applications first: they would log connection errors while the services go away.
        if self.apps:
            stop_children(self.apps)
        if self.processes:
            names = ", ".join(child.name for child in self.processes)
            log(f"stopping {names}")
            stop_children(list(reversed(self.processes)))
        if self.pg_server is not None:
            # pgserver counts handles per data dir: cleanup() stops the server only if no other
            # invocation (a concurrent `make run`) still holds one.
            others = [pid for pid in pgserver_handles(VAR / "pg") if pid != os.getpid()]
            if others:
                log(f"leaving the embedded PostgreSQL to process(es) {others} still using it")
            else:
                log("stopping the embedded PostgreSQL")
            try:
                self.pg_server.cleanup()
            except Exception as exc:
                log(f"could not stop the embedded PostgreSQL cleanly: {exc}")
            self.pg_server = None
