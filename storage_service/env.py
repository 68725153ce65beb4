"""Small typed readers for configuration from the environment.

Each reader refuses a bad value with ImproperlyConfigured instead of guessing: a typo in a
deployment should stop the process at start-up, not surface later as odd behaviour.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def load_env_file(path: Path) -> None:
    """Add KEY=VALUE lines of ``path`` to os.environ for keys not already set.

    Only the local-development and test profiles call this: ``scripts/devservices.py`` writes
    the addresses of the services it found or started there, so ``manage.py`` in the same
    checkout talks to the same PostgreSQL, Redis and object store as ``make run``.
    """
    if not path.exists():
        return
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        os.environ.setdefault(key.strip(), value.strip())


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        if default is None:
            raise ImproperlyConfigured(f"{name} must be set")
        return default
    return value


def env_secret(name: str, default: str | None = None) -> str:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (Docker/K8s secrets)."""
    from_file = env_secret_file(name)
    return env_str(name, default) if from_file is None else from_file


def env_secret_file(name: str) -> str | None:
    """The secret in the file named by ``NAME_FILE``, or None when that is not set."""
    file_name = os.environ.get(f"{name}_FILE")
    if not file_name:
        return None
    try:
        value = Path(file_name).read_text().strip()
    except OSError as exc:
        raise ImproperlyConfigured(f"{name}_FILE: cannot read {file_name}: {exc}") from exc
    if not value:
        raise ImproperlyConfigured(f"{name}_FILE: {file_name} is empty")
    return value


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {value}")
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int_list(name: str, default: list[int], *, minimum: int = 0) -> list[int]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    values: list[int] = []
    for item in raw.split(","):
        try:
            value = int(item.strip())
        except ValueError as exc:
            raise ImproperlyConfigured(
                f"{name} must be comma-separated integers, got {raw!r}"
            ) from exc
        if value < minimum:
            raise ImproperlyConfigured(f"{name}: every value must be at least {minimum}")
        values.append(value)
    if not values:
        raise ImproperlyConfigured(f"{name} must list at least one value")
    return values
