"""Real server processes for tests: an API server or a delivery server, as `make run` starts
them (storage_service/serving.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests
from django.conf import settings

from tests.subprocesses import database_url

ROOT = Path(__file__).resolve().parents[1]
# The session server's settings (the ``api_base`` fixture): a local receiver listens on
# 127.0.0.1, which the suite's Celery workers allow too.
SESSION_SERVER_ENV = {"SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve_api(workers: int = 1, role: str = "api", **env_overrides: str) -> Iterator[str]:
    """An API server (``role="delivery"``: a delivery server) on a free port; its base URL."""
    port = free_port()
    # Not tests/conftest.py's WEB_THREADS, set for the suite's own process: the server runs
    # its role's default.
    inherited = {name: value for name, value in os.environ.items() if name != "WEB_THREADS"}
    env = {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
        "DATABASE_URL": database_url(),
        # Kept resolution rows, as deployed (off in the suite's own process: settings/test.py).
        "SERVICE_DELIVERY_REMEMBER_SECONDS": str(settings.DELIVERY_REMEMBER_SECONDS_DEFAULT),
        **env_overrides,
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "storage_service.serving",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            "--role",
            role,
        ],
        cwd=ROOT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start")
            time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
