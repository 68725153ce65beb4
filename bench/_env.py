"""Where the benchmarks run: the checkout, the settings the API runs with, the log."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/storage_service"
BENCH_SUFFIX = "_bench"
SETTINGS_MODULE = "storage_service.settings.dev"
# The dev settings with DEBUG off, as a deployment runs (and as the peer runs with
# NODE_ENV=production): DEBUG keeps a log of every SQL statement, which no deployment pays.
# SERVICE_DEBUG=true in the environment measures the DEBUG profile instead.
DEBUG_ENVIRONMENT = {"SERVICE_DEBUG": os.environ.get("SERVICE_DEBUG", "false")}


def log(message: str) -> None:
    print(f"bench | {message}", file=sys.stderr, flush=True)


def server_environment(url: str, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        **DEBUG_ENVIRONMENT,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": SETTINGS_MODULE,
        **extra,
    }
    env["PATH"] = os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])
    return env


def setup_django(url: str) -> None:
    """Configure Django in this process against the bench database (for keys, cursors, SQL)."""
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    os.environ.update(DEBUG_ENVIRONMENT)
    import django

    django.setup()
