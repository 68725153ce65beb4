"""The production profile passes Django's deployment checklist and refuses to start half-set."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "storage_service.settings.production",
    "SERVICE_SECRET_KEY": secrets.token_urlsafe(50),
    "SERVICE_API_KEY_HASH_SECRET": secrets.token_urlsafe(32),
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "example-secret",
    "SERVICE_ALLOWED_HOSTS": "files.example.com",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SERVICE_", "AWS_"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_production_profile_passes_check_deploy() -> None:
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_refuses_private_network_webhooks_and_debug() -> None:
    script = (
        "from django.conf import settings as s;"
        "print(s.DEBUG, s.SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS, s.SESSION_COOKIE_SECURE)"
    )
    result = manage("shell", "-c", script, **PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].split() == ["False", "False", "True"]


def test_production_without_allowed_hosts_or_secrets_does_not_start() -> None:
    no_hosts = {k: v for k, v in PRODUCTION_ENV.items() if k != "SERVICE_ALLOWED_HOSTS"}
    result = manage("check", **no_hosts)
    assert result.returncode != 0
    assert "SERVICE_ALLOWED_HOSTS" in result.stderr
    no_secret = {k: v for k, v in PRODUCTION_ENV.items() if k != "SERVICE_SECRET_KEY"}
    result = manage("check", **no_secret)
    assert result.returncode != 0
    assert "SERVICE_SECRET_KEY" in result.stderr
