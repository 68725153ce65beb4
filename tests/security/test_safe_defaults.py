"""No process falls back to the dev profile: started without a settings profile, the API
server, the Celery worker and beat, and manage.py refuse to start (real subprocesses).

The dev profile is the only one that allows webhooks into private networks; the others
refuse them unless the operator sets SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import requests

from storage_service.settings.profile import EXIT_STATUS
from tests.ops.test_production import PRODUCTION_ENV
from tests.servers import ROOT, free_port

BIN = os.path.dirname(sys.executable)
NO_PROFILE = "DJANGO_SETTINGS_MODULE is not set"


def environment(**extra: str) -> dict[str, str]:
    """The suite's environment without a profile and without the service's own settings."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if k != "DJANGO_SETTINGS_MODULE" and not k.startswith(("SERVICE_", "AWS_"))
    }
    return {**clean, **extra}


def run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=ROOT, env=environment(**env), capture_output=True, text=True, timeout=90
    )


COMMANDS = {
    "manage.py": [sys.executable, "manage.py", "check"],
    "API server": [sys.executable, "-m", "storage_service.serving", "--bind", "127.0.0.1:0"],
    "celery worker": [
        sys.executable,
        *("-m", "celery", "-A", "storage_service", "worker", "--pool", "solo"),
        *("-Q", "no-such-queue", "--without-gossip", "--without-mingle"),
    ],
    "celery beat": [
        sys.executable,
        *("-m", "celery", "-A", "storage_service", "beat", "--schedule", os.devnull),
    ],
}


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_no_process_starts_without_a_settings_profile(command: list[str]) -> None:
    result = run(command)

    assert result.returncode == EXIT_STATUS, result.stdout + result.stderr
    assert NO_PROFILE in result.stderr


def test_an_explicit_profile_starts() -> None:
    result = run(
        [sys.executable, "manage.py", "check"],
        DJANGO_SETTINGS_MODULE="storage_service.settings.dev",
    )
    assert result.returncode == 0, result.stderr


def test_the_api_server_with_the_production_profile_serves() -> None:
    """The refusal is about the missing choice only: production, fully set, serves."""
    port = free_port()
    env = environment(**PRODUCTION_ENV, SERVICE_SECURE_SSL_REDIRECT="false")
    server = subprocess.Popen(
        [sys.executable, "-m", "storage_service.serving", "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                response = requests.get(
                    f"http://127.0.0.1:{port}/healthz",
                    headers={"Host": "files.example.com"},
                    timeout=30,
                )
                break
            except requests.ConnectionError:
                assert server.poll() is None, "the API server exited"
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert response.status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=15)


PRIVATE = "from django.conf import settings as s; print(s.SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS)"


@pytest.mark.parametrize(
    ("profile", "extra", "allowed"),
    [
        ("storage_service.settings.production", PRODUCTION_ENV, "False"),
        ("storage_service.settings.test", {}, "False"),
        ("storage_service.settings.dev", {}, "True"),
        (
            "storage_service.settings.production",
            {**PRODUCTION_ENV, "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true"},
            "True",
        ),
    ],
    ids=["production", "test", "dev", "production, operator allows"],
)
def test_private_networks_are_refused_unless_dev_or_the_setting(
    profile: str, extra: dict[str, str], allowed: str
) -> None:
    result = run(
        [sys.executable, "manage.py", "shell", "-c", PRIVATE],
        **{**extra, "DJANGO_SETTINGS_MODULE": profile},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == allowed
