"""PostgreSQL for the dev services: the one DATABASE_URL names, else a local one, else the
embedded pgserver in var/pg; and the service's database in it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from scripts.processes import ROOT, ServiceError, log, pid_alive
from scripts.servers.common import (
    DEFAULT_DATABASE_URL,
    VAR,
    Services,
    env,
    pgserver_handles,
    redact,
)


def _pg_params(url: str, **overrides: str | int) -> dict[str, Any]:
    try:
        params: dict[str, Any] = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ServiceError(f"DATABASE_URL is not a valid PostgreSQL URL: {exc}") from exc
    params.update(overrides)
    return params


def _pg_probe(url: str) -> None:
    """Connect to the server's maintenance database; raise psycopg.OperationalError if no
    usable server answers (refused, timed out, or our credentials rejected)."""
    with psycopg.connect(**_pg_params(url, dbname="postgres", connect_timeout=2)):
        pass


def _pg_prepare(url: str) -> None:
    """Create the target database if missing, and pg_trgm in it where available."""
    target = _pg_params(url).get("dbname")
    if not target:
        raise ServiceError(f"DATABASE_URL names no database: {redact(url)}")
    params = _pg_params(url, dbname="postgres", connect_timeout=2)
    with psycopg.connect(**params, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (target,)).fetchone()
        if exists is None:
            log(f"creating database {target}")
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(target)))
            except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                pass  # a concurrent invocation created it first
            except psycopg.Error as exc:
                raise ServiceError(f"cannot create database {target}: {exc}") from exc
    # Trigram indexes speed up name search; the app works without them, and the embedded
    # server's build has no contrib modules, so failure is only worth a note.
    try:
        with psycopg.connect(**_pg_params(url, connect_timeout=2), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except psycopg.Error as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        log(f"pg_trgm not available ({first_line}); continuing without it")


def _prune_pgserver_handles(pgdata: Path) -> None:
    """Drop dead pids from pgserver's handle list.

    pgserver stops its server when the last process holding a handle exits; a pid left by an
    invocation that was SIGKILLed would stay in the list forever and keep the server from
    ever being stopped again.
    """
    pids = pgserver_handles(pgdata)
    alive = [pid for pid in pids if pid_alive(pid)]
    if alive != pids:
        (pgdata / ".handle_pids.json").write_text(json.dumps(alive))


def start_embedded_postgres(services: Services, database: str) -> str:
    """Start (or join) the pgserver PostgreSQL in var/pg; return a DATABASE_URL for it.

    pgserver listens on a unix socket only (it passes ``-h ""``), in the data dir unless that
    path is too long for a socket name, so the URL carries the socket directory as
    ``?host=``, which both libpq and the Django settings understand.
    """
    pgdata = VAR / "pg"
    pgdata.mkdir(parents=True, exist_ok=True)
    _prune_pgserver_handles(pgdata)
    log(f"starting (or joining) the embedded PostgreSQL (pgserver) in {pgdata.relative_to(ROOT)}")
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver then
        # keeps its lock file under /tmp, which is fine.
        warnings.simplefilter("ignore")
        import pgserver

        try:
            server = pgserver.get_server(pgdata, cleanup_mode="stop")
        except Exception as exc:
            raise ServiceError(
                f"the embedded PostgreSQL did not start ({exc}); see {pgdata / 'log'}"
            ) from exc
    services.pg_server = server
    info = server.get_postmaster_info()
    if info.socket_dir is None:
        # Not on Linux/macOS: pgserver listens on TCP instead, and knows its own URI.
        uri: str = server.get_uri(database)
        return uri
    port = f":{info.port}" if info.port and info.port != 5432 else ""
    return f"postgres://postgres@{port}/{quote(database)}?host={quote(str(info.socket_dir))}"


def ensure_postgres(services: Services) -> str:
    explicit = env("DATABASE_URL")
    url = explicit or DEFAULT_DATABASE_URL
    try:
        _pg_probe(url)
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if explicit:
            raise ServiceError(
                f"DATABASE_URL={redact(url)} does not answer: {reason.rstrip('.')}. "
                "Start that server, or unset DATABASE_URL to use a local or embedded one."
            ) from exc
        log(f"no usable PostgreSQL at {redact(url)} ({reason})")
        database = _pg_params(url).get("dbname") or "storage_service"
        url = start_embedded_postgres(services, database)
    _pg_prepare(url)
    return url
