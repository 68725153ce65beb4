"""The bench database: beside the dev one (``_bench`` appended), created, migrated."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from bench._env import BENCH_SUFFIX, DEFAULT_DATABASE_URL, ROOT, log, server_environment


def bench_database_url() -> str:
    """The bench database: BENCH_DATABASE_URL, else DATABASE_URL's server with ``_bench``.

    DATABASE_URL is what ``devservices.py exec`` resolved (possibly an embedded server on a
    unix socket); only the database name changes, so the bench runs on the same server.
    """
    explicit = os.environ.get("BENCH_DATABASE_URL")
    url = explicit or os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not explicit:
        name = name if name.endswith(BENCH_SUFFIX) else name + BENCH_SUFFIX
        url = urlunsplit(parts._replace(path="/" + name))
    if not name.endswith(BENCH_SUFFIX):
        # The bench drops and recreates its database: never let that be a real one.
        raise SystemExit(f"refusing to use {name!r} as the bench database (must end in _bench)")
    return url


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def connect(url: str, *, maintenance: bool = False, autocommit: bool = False) -> psycopg.Connection:
    # psycopg's URL parser keeps ?host=/socket/dir, which the embedded PostgreSQL needs.
    if maintenance:
        return psycopg.connect(url, dbname="postgres", autocommit=True)
    return psycopg.connect(url, autocommit=autocommit)


def database_exists(url: str) -> bool:
    with connect(url, maintenance=True) as conn:
        row = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database_name(url),)
        ).fetchone()
        return row is not None


def create_database(url: str, *, drop_first: bool = False) -> None:
    name = database_name(url)
    with connect(url, maintenance=True) as conn:
        if drop_first:
            log(f"dropping database {name}")
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
        log(f"creating database {name}")
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def migrate(url: str) -> None:
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=server_environment(url),
        check=True,
    )
    log(f"migrated {database_name(url)} in {time.monotonic() - started:.1f} s")


def ensure_database(url: str) -> None:
    """Create the bench database if missing and apply any migration it lacks."""
    if not database_exists(url):
        create_database(url)
    migrate(url)
