#!/usr/bin/env python3
"""The app's processes for local development and the test suite, around the servers
``servers.py`` finds or starts (PostgreSQL, Redis, SeaweedFS).

    python -m scripts.devservices exec -- CMD ARGS...   # servers around one command
    python -m scripts.devservices run                   # migrate, then API, delivery, workers, beat
    python -m scripts.devservices up                    # servers only, until Ctrl-C

The command lines of the API, the workers and beat are defined here once; `make cluster`,
the benches and deploy/ start the same ones. Only processes this invocation started are
stopped when it ends.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from scripts.processes import (
    Interrupted,
    ServiceError,
    log,
    print_block,
    print_tail,
    raise_interrupted,
    set_signal_handlers,
    spawn,
)
from scripts.servers import (
    ENV_FILE,
    VAR,
    VENV_BIN,
    Services,
    ensure_services,
    env,
    redact,
    write_env_file,
)


def cpu_count() -> int:
    # Like nproc: honours CPU affinity (containers, taskset), unlike os.cpu_count().
    return len(os.sched_getaffinity(0)) or 1


def child_environment(resolved: dict[str, str]) -> dict[str, str]:
    child_env = {**os.environ, **resolved}
    # The venv's tools first, for anything the children themselves spawn.
    child_env["PATH"] = os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])
    child_env["VIRTUAL_ENV"] = str(VENV_BIN.parent)
    return child_env


def in_terminal_foreground() -> bool:
    """Whether a Ctrl-C at the terminal reaches our process group (and so the child of
    `exec`, which shares it) directly."""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            if stream is not None and stream.isatty():
                return os.tcgetpgrp(stream.fileno()) == os.getpgrp()
        except (OSError, ValueError):
            continue
    return False


def cmd_exec(args: argparse.Namespace, services: Services) -> int:
    command: list[str] = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ServiceError("exec needs a command: devservices.py exec -- CMD ARGS...")
    resolved = ensure_services(services)
    write_env_file(resolved)
    try:
        # Same process group as ours, not a new session: the command stays in the terminal's
        # foreground (pytest --pdb can read input) and gets Ctrl-C from it directly.
        proc = subprocess.Popen(command, env=child_environment(resolved))
    except OSError as exc:
        log(f"cannot run {command[0]}: {exc}")
        return 127
    foreground = in_terminal_foreground()

    def forward(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and foreground:
            return  # the terminal delivered it to the command already; a second would hurt
        proc.send_signal(signum)

    set_signal_handlers(forward)
    returncode = proc.wait()
    set_signal_handlers(signal.SIG_IGN)
    # Shell convention for "killed by signal N".
    return 128 - returncode if returncode < 0 else returncode


def banner(resolved: dict[str, str], api_url: str, delivery_url: str | None = None) -> None:
    python = ".venv/bin/python"
    delivery = (
        f"\n  Delivery URLs:       {delivery_url}/d/… (a server of their own; the API answers "
        "them too)"
        if delivery_url
        else ""
    )
    text = f"""
  Storage service API: {api_url}/v1/ (the API's document: {api_url}/docs){delivery}
  Staff console:       {api_url}/admin/ (manage.py createsuperuser makes a login)
  Health:              {api_url}/healthz, {api_url}/readyz
  Database: {redact(resolved["DATABASE_URL"])}
  Redis:    {redact(resolved["REDIS_URL"])}
  S3:       {resolved["AWS_S3_ENDPOINT_URL"]} (bucket {resolved["AWS_STORAGE_BUCKET_NAME"]})

  Create a project and an API key, in another terminal:
    export DJANGO_SETTINGS_MODULE=storage_service.settings.dev
    {python} manage.py create_project --name demo
    {python} manage.py issue_api_key --project <PROJECT_ID> --environment test

  Ctrl-C stops everything.
"""
    print_block(text)


def positive_int_env(name: str, default: int) -> int:
    raw = env(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ServiceError(f"{name} must be a positive integer, got {raw!r}") from exc
    if value < 1:
        raise ServiceError(f"{name} must be a positive integer, got {raw!r}")
    return value


def supervise(services: Services) -> int:
    """Wait until a child or a service we started exits (or a signal interrupts us)."""
    watched = services.apps + services.processes
    while True:
        for child in watched:
            code = child.proc.poll()
            if code is not None:
                log(f"{child.name} exited with code {code}; stopping everything")
                if child.log_path is not None:
                    print_tail(child.name, child.log_path)
                # Killed by signal N reads as 128+N, as in a shell; a clean exit is still a
                # failure here, since these processes are meant to run until stopped.
                return 128 - code if code < 0 else code or 1
        time.sleep(0.2)


def api_command(
    port: int,
    host: str = "127.0.0.1",
    app: str = "storage_service.wsgi:application",
    role: str = "api",
) -> list[str | Path]:
    """The API server, as `make run`, `make cluster`, the benches and deploy/ start it: every
    setting but the address is in storage_service/serving.py (workers from WEB_CONCURRENCY).
    ``app``: the benchmark serves its reference app with the very same settings. ``role``
    ``delivery``: the delivery server, which answers only delivery URLs and the probes."""
    # fmt: off
    command: list[str | Path] = [
        VENV_BIN / "python", "-m", "storage_service.serving", "--bind", f"{host}:{port}",
    ]
    # fmt: on
    if app != "storage_service.wsgi:application":
        command += ["--app", app]
    if role != "api":
        command += ["--role", role]
    return command


def transform_worker_command(concurrency: int, node: str = "celery@%h") -> list[str | Path]:
    """The worker of the sweeps (Celery's default queue) and the transforms' own queue."""
    transforms = env("SERVICE_TRANSFORM_QUEUE") or "transforms"
    # fmt: off
    return [
        VENV_BIN / "celery", "-A", "storage_service", "worker", "-n", node,
        "--loglevel", "INFO", "--concurrency", str(concurrency),
        "-Q", f"celery,{transforms}",
    ]
    # fmt: on


def beat_command(schedule: Path = VAR / "celerybeat-schedule") -> list[str | Path]:
    """The scheduler. Exactly one may run per deployment, or every periodic task runs twice."""
    # fmt: off
    return [
        VENV_BIN / "celery", "-A", "storage_service", "beat",
        "--loglevel", "INFO", "--schedule", schedule,
    ]
    # fmt: on


def webhook_worker_command(node: str = "webhooks@%h") -> list[str | Path]:
    """The worker of the webhook queue, as `make run` starts it (the benchmark reuses it).

    Delivery is network-bound: one process whose task threads each send a batch (an event's
    deliveries) concurrently over pooled keep-alive connections (webhooks/delivery.py).
    Its own queue, so image work on the main worker never delays a delivery. WARNING level:
    at hundreds of tasks per second, INFO's two lines per task cost more than the task.
    """
    queue = env("SERVICE_WEBHOOK_QUEUE") or "webhooks"
    threads = positive_int_env("WEBHOOK_WORKER_THREADS", 8)
    # fmt: off
    return [
        VENV_BIN / "celery", "-A", "storage_service", "worker",
        "-Q", queue, "-n", node, "--pool", "threads", "--concurrency", str(threads),
        "--without-gossip", "--without-mingle", "--loglevel", "WARNING",
    ]
    # fmt: on


def webhook_worker_environment(threads: int | None = None) -> dict[str, str]:
    """What the webhook worker's environment adds to the service's: its database connections
    from a pool (DATABASE_POOL_SIZE, storage_service/settings/database.py) of one for each
    task thread (WEBHOOK_WORKER_THREADS unless given) and two more (the recording thread's,
    the sweep's). Celery closes a task's connections when it ends; the pool keeps them open
    for the next task."""
    if threads is None:
        threads = positive_int_env("WEBHOOK_WORKER_THREADS", 8)
    return {"DATABASE_POOL_SIZE": str(threads + 2)}


def app_environment(resolved: dict[str, str]) -> dict[str, str]:
    """The environment of the service's own processes (the API server, celery)."""
    child_env = child_environment(resolved)
    # Children write through a pipe to our prefixer; unbuffered so lines arrive as they happen.
    child_env["PYTHONUNBUFFERED"] = "1"
    # The processes have no default profile (storage_service/settings/profile.py): `make run`
    # is local development, unless the caller chose another profile.
    if not child_env.get("DJANGO_SETTINGS_MODULE"):
        child_env["DJANGO_SETTINGS_MODULE"] = "storage_service.settings.dev"
    return child_env


def run_migrations(services: Services, child_env: dict[str, str]) -> int:
    """`manage.py migrate`, before any process that serves; its exit code (0 on success)."""
    migrate = spawn(
        "migrate",
        [sys.executable, "manage.py", "migrate", "--noinput"],
        child_env=child_env,
    )
    services.apps.append(migrate)
    code = migrate.proc.wait()
    if migrate.reader is not None:
        migrate.reader.join(timeout=2)
    services.apps.remove(migrate)
    if code != 0:
        log(f"manage.py migrate failed with code {code}")
        return code if code > 0 else 1
    return 0


def cmd_run(args: argparse.Namespace, services: Services) -> int:
    port = positive_int_env("PORT", 8000)
    delivery_port = positive_int_env("DELIVERY_PORT", port + 1)
    # Checked here for a clear message; storage_service/serving.py reads it.
    positive_int_env("WEB_CONCURRENCY", 1)
    concurrency = positive_int_env("CELERY_CONCURRENCY", cpu_count())
    resolved = ensure_services(services)
    write_env_file(resolved)
    child_env = app_environment(resolved)
    delivery_url = f"http://127.0.0.1:{delivery_port}"
    # The URLs the API signs name the delivery server, unless the caller chose a host (a CDN).
    if not child_env.get("SERVICE_DELIVERY_BASE_URL"):
        child_env["SERVICE_DELIVERY_BASE_URL"] = delivery_url
    code = run_migrations(services, child_env)
    if code != 0:
        return code

    banner(resolved, f"http://127.0.0.1:{port}", child_env["SERVICE_DELIVERY_BASE_URL"])
    commands: list[tuple[str, list[str | Path]]] = [
        ("api", api_command(port)),
        ("delivery", api_command(delivery_port, role="delivery")),
        ("worker", transform_worker_command(concurrency)),
        ("webhooks", webhook_worker_command()),
        ("beat", beat_command()),
    ]
    for name, cmd in commands:
        env = {**child_env, **webhook_worker_environment()} if name == "webhooks" else child_env
        services.apps.append(spawn(name, cmd, child_env=env))
    return supervise(services)


def cmd_up(args: argparse.Namespace, services: Services) -> int:
    resolved = ensure_services(services)
    write_env_file(resolved)
    print(ENV_FILE.read_text(), end="", flush=True)
    log("services are up; Ctrl-C stops the ones started here")
    return supervise(services)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.devservices",
        description="Ensure PostgreSQL, Redis and an S3 store answer; run commands around them.",
    )
    sub = parser.add_subparsers(dest="mode", required=True)
    exec_parser = sub.add_parser("exec", help="run one command with the services, then stop them")
    exec_parser.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    exec_parser.set_defaults(func=cmd_exec)
    run_parser = sub.add_parser("run", help="migrate, then run the API, worker and beat")
    run_parser.set_defaults(func=cmd_run)
    up_parser = sub.add_parser("up", help="start the services and keep them up until Ctrl-C")
    up_parser.set_defaults(func=cmd_up)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    services = Services()
    # Until the command runs, a signal unwinds whatever is starting, straight to the cleanup.
    set_signal_handlers(raise_interrupted)
    try:
        result: int = args.func(args, services)
        return result
    except Interrupted as exc:
        name = signal.Signals(exc.signum).name
        if args.mode == "exec":
            log(f"interrupted by {name}")
            return 128 + exc.signum
        log(f"{name} received; stopping")
        return 0
    except ServiceError as exc:
        log(f"error: {exc}")
        return 1
    finally:
        # A second Ctrl-C must not abandon the cleanup halfway; it is bounded by STOP_TIMEOUT.
        set_signal_handlers(signal.SIG_IGN)
        services.stop()


if __name__ == "__main__":
    sys.exit(main())
