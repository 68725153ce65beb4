"""Helpers shared by the benchmarks: the bench database, bulk seeding, the server, statistics.

The benchmarks never touch the development database: they work in their own database, named
after the dev one with ``_bench`` appended (``storage_service_bench``), or the one given by
``BENCH_DATABASE_URL``. The API server is started exactly as ``scripts/devservices.py run``
starts it (storage_service/serving.py: same settings module, workers and threads), bound to a
free port on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

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


# --- The bench database ---------------------------------------------------------------------


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


# --- Seeding --------------------------------------------------------------------------------

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_ALPHABET_ARRAY = "'{" + ",".join(_ALPHABET) + "}'::text[]"


def _crockford(expr: str, chars: int) -> str:
    """SQL: the low ``5 * chars`` bits of bigint ``expr`` in lowercase Crockford base32."""
    return " || ".join(
        f"({_ALPHABET_ARRAY})[((({expr}) >> {5 * (chars - 1 - k)}) & 31) + 1]" for k in range(chars)
    )


def file_id_sql(millis: str, random_hi: str, serial: str) -> str:
    """SQL for an id shaped as storage_service.ids.new_id makes them.

    ``file_`` + 26 chars encoding ``millis << 80 | random80``: 10 chars of time (48 bits, two
    zero bits on top), then 80 "random" bits, here 50 random bits (``random_hi``) and 30 bits
    of ``serial``, which makes every id unique without a uniqueness retry.
    """
    return f"'file_' || {_crockford(millis, 10)} || {_crockford(random_hi, 10)} || " + _crockford(
        serial, 6
    )


# Filename pattern, content type and log-uniform size range (bytes) by n % 10.
_KINDS: Sequence[tuple[str, str, int, int]] = (
    ("'IMG_' || n || '.jpg'", "image/jpeg", 200_000, 8_000_000),
    ("'IMG_' || n || '.jpg'", "image/jpeg", 200_000, 8_000_000),
    ("'IMG_' || n || '.jpg'", "image/jpeg", 200_000, 8_000_000),
    ("'Screenshot_' || n || '.png'", "image/png", 50_000, 3_000_000),
    ("'report-' || n || '.pdf'", "application/pdf", 20_000, 20_000_000),
    ("'invoice_' || n || '.pdf'", "application/pdf", 20_000, 2_000_000),
    ("'notes-' || n || '.txt'", "text/plain", 100, 50_000),
    ("'data-export-' || n || '.csv'", "text/csv", 1_000, 100_000_000),
    ("'video_' || n || '.mp4'", "video/mp4", 5_000_000, 2_000_000_000),
    ("'archive-' || n || '.zip'", "application/zip", 1_000_000, 1_000_000_000),
)
TEAMS = 60
YEARS = (2021, 2022, 2023, 2024, 2025)


def _case(values: Sequence[str]) -> str:
    whens = " ".join(f"WHEN {k} THEN {value}" for k, value in enumerate(values))
    return f"CASE n %% {len(values)} {whens} END"


def seed_files_sql() -> str:
    """INSERT ... SELECT generate_series: ``%(rows)s`` files of ``%(project)s``.

    Created over the last year in n order (so ids, which start with the creation time, grow
    with n); ~3% deleted, ~2% pending, the rest uploaded; ~10% at the root, the others in one
    of TEAMS x YEARS folders ``team-<k>/year-<y>``. Every file points at ``%(object)s``.
    """
    filename = _case([kind[0] for kind in _KINDS])
    content_type = _case([f"'{kind[1]}'" for kind in _KINDS])
    size = _case(
        [
            f"round(exp(ln({lo}) + s.u_size * (ln({hi}) - ln({lo}))))::bigint"
            for _, _, lo, hi in _KINDS
        ]
    )
    years = ",".join(str(y) for y in YEARS)
    file_id = file_id_sql("s.millis", "s.random_hi", "s.n")
    return f"""
        INSERT INTO files_file (
            id, project_id, mode, filename, path, content_type, size, status, version, metadata,
            checksum, sniffed_type, current_object_id, replacement_object_id, created_at,
            updated_at, uploaded_at, deleted_at, status_before_delete, purged_at
        )
        SELECT
            {file_id},
            %(project)s,
            'test',  -- the benches' keys are test keys, which see only test-mode files
            s.filename,
            CASE WHEN s.u_path < 0.1 THEN NULL
                 ELSE 'team-' || floor(s.u_path * 10 * {TEAMS})::int %% {TEAMS} || '/year-'
                      || (ARRAY[{years}])[floor(random() * {len(YEARS)})::int + 1]
            END,
            s.content_type,
            {size},
            s.status,
            CASE WHEN s.u_meta < 0.05 THEN 2 ELSE 1 END,
            CASE WHEN s.u_meta < 0.2
                 THEN jsonb_build_object('source', 'bench', 'batch', s.n %% 97) END,
            CASE WHEN s.status <> 'pending'
                 THEN 'sha256:' || md5(s.n::text) || md5((s.n + 1)::text) END,
            CASE WHEN s.status <> 'pending' THEN s.content_type END,
            %(object)s,
            NULL,
            s.created_at,
            CASE WHEN s.status = 'deleted' THEN s.changed_at
                 WHEN s.u_meta < 0.3 THEN s.changed_at
                 ELSE s.created_at + interval '2 seconds' END,
            CASE WHEN s.status <> 'pending' THEN s.created_at + interval '2 seconds' END,
            CASE WHEN s.status = 'deleted' THEN s.changed_at END,
            CASE WHEN s.status = 'deleted' THEN 'uploaded' ELSE '' END,
            NULL
        FROM (
            SELECT
                g.n,
                g.created_at,
                g.created_at + (%(now)s - g.created_at) * random() AS changed_at,
                floor(extract(epoch FROM g.created_at) * 1000)::bigint AS millis,
                floor(random() * 1125899906842624)::bigint AS random_hi,
                {filename} AS filename,
                {content_type} AS content_type,
                CASE WHEN g.u_status < 0.03 THEN 'deleted'
                     WHEN g.u_status < 0.05 THEN 'pending'
                     ELSE 'uploaded' END AS status,
                random() AS u_size,
                random() AS u_path,
                random() AS u_meta
            FROM (
                SELECT
                    n,
                    %(start)s + %(step)s * (n + 0.9 * random()) AS created_at,
                    random() AS u_status
                FROM generate_series(1::bigint, %(rows)s::bigint) AS n
            ) AS g
        ) AS s
    """


def _droppable_indexes(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """files_file's indexes that back no constraint (all but the primary key), with DDL."""
    rows = conn.execute(
        """
        SELECT c.relname, pg_get_indexdef(i.indexrelid)
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'files_file'::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
        ORDER BY c.relname
        """
    ).fetchall()
    return [(name, ddl) for name, ddl in rows]


def seed_files(
    url: str, *, project_id: str, object_id: int, rows: int, rebuild_indexes: bool
) -> None:
    """Insert ``rows`` files in one transaction, then VACUUM ANALYZE.

    With ``rebuild_indexes`` the secondary indexes are dropped before the insert and rebuilt
    after it (from their own definitions, so any index a migration adds is rebuilt too):
    building an index once is several times faster than inserting a million rows into ten.
    Foreign-key triggers are skipped for the insert (session_replication_role) where we may:
    every row references the same project and stored object, both created just before.
    """
    started = time.monotonic()
    with connect(url) as conn:
        conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
        conn.execute("SET LOCAL synchronous_commit = off")
        try:
            with conn.transaction():
                conn.execute("SET LOCAL session_replication_role = replica")
        except psycopg.errors.InsufficientPrivilege:
            log("not a superuser: foreign keys are checked during the insert (slower)")
        indexes = _droppable_indexes(conn) if rebuild_indexes else []
        for name, _ in indexes:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        year_us = 365 * 24 * 3600 * 1_000_000
        params = {
            "project": project_id,
            "object": object_id,
            "rows": rows,
            "now": _db_now(conn),
            "start": _db_now(conn) - _micros(year_us),
            "step": _micros(year_us // (rows + 1)),
        }
        conn.execute(seed_files_sql(), params)
        inserted = time.monotonic()
        log(f"inserted {rows:,} files in {inserted - started:.1f} s")
        for _, ddl in indexes:
            conn.execute(ddl)
        if indexes:
            log(f"rebuilt {len(indexes)} indexes in {time.monotonic() - inserted:.1f} s")
        conn.execute("SET LOCAL session_replication_role = DEFAULT")
        conn.commit()
    vacuumed = time.monotonic()
    with connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) files_file")
    log(f"VACUUM ANALYZE in {time.monotonic() - vacuumed:.1f} s")


def _db_now(conn: psycopg.Connection) -> datetime:
    row = conn.execute("SELECT date_trunc('second', now())").fetchone()
    assert row is not None
    now: datetime = row[0]
    return now


def _micros(value: int) -> timedelta:
    return timedelta(microseconds=value)


def shared_object(project_id: str) -> int:
    """One live stored object that every seeded file points at (needs Django set up)."""
    from files.models import StoredObject

    stored, _ = StoredObject.objects.get_or_create(
        storage_key=f"{project_id}/bench-shared-object",
        defaults={
            "project_id": project_id,
            "mode": "test",  # the benches' keys are test keys
            "state": StoredObject.State.LIVE,
            "declared_type": "application/octet-stream",
            "declared_size": 1024,
            "size": 1024,
        },
    )
    return stored.pk


def delete_project(url: str, project_id: str) -> None:
    """Remove a bench project and every row that belongs to it, in one transaction.

    Tables are found from the catalog (every table with a ``project_id``, and those that
    reference files_file by ``file_id``), so tables added later are covered; the foreign keys
    are deferred, so the order does not matter within the transaction.
    """
    with connect(url) as conn:
        by_file = conn.execute(
            """
            SELECT DISTINCT c.conrelid::regclass::text, a.attname
            FROM pg_constraint c
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
            WHERE c.contype = 'f' AND c.confrelid = 'files_file'::regclass
            """
        ).fetchall()
        for table, column in by_file:
            conn.execute(
                sql.SQL(
                    "DELETE FROM {} WHERE {} IN (SELECT id FROM files_file WHERE project_id = %s)"
                ).format(sql.Identifier(table), sql.Identifier(column)),
                (project_id,),
            )
        by_project = conn.execute(
            """
            SELECT c.conrelid::regclass::text
            FROM pg_constraint c
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
            WHERE c.contype = 'f' AND c.confrelid = 'accounts_project'::regclass
              AND a.attname = 'project_id'
            """
        ).fetchall()
        # Files before stored objects only for readability: the constraints are deferred.
        tables = sorted({row[0] for row in by_project}, key=lambda t: t != "files_file")
        for table in tables:
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE project_id = %s").format(sql.Identifier(table)),
                (project_id,),
            )
        # Usage delta rows name the project without a foreign key.
        if conn.execute("SELECT to_regclass('files_usagedelta')").fetchone() != (None,):
            conn.execute("DELETE FROM files_usagedelta WHERE project_id = %s", (project_id,))
        org = conn.execute(
            "DELETE FROM accounts_project WHERE id = %s RETURNING organization_id", (project_id,)
        ).fetchone()
        if org is not None:
            conn.execute(
                "DELETE FROM accounts_organization o WHERE id = %s AND NOT EXISTS "
                "(SELECT 1 FROM accounts_project p WHERE p.organization_id = o.id)",
                (org[0],),
            )
        conn.commit()


# --- The server -----------------------------------------------------------------------------


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) or 1


def web_workers() -> int:
    """The API server's worker processes, as storage_service/serving.py counts them."""
    from storage_service.serving import web_workers

    return web_workers()


def worker_line() -> str:
    from storage_service.serving import web_threads

    return f"granian WSGI, {web_threads()} thread(s) each"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    base_url: str
    port: int
    workers: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    app: str = "storage_service.wsgi:application"

    def describe(self) -> str:
        return (
            f"{self.app}, {self.workers} workers ({worker_line()}, from "
            f"storage_service/serving.py as `make run`), {self.base_url}"
        )

    def cpu(self) -> CpuTimes:
        return cpu_times(self.proc.pid)


@dataclass(frozen=True)
class CpuTimes:
    """CPU seconds used so far: the API server (main process and workers), every PostgreSQL
    process, and the whole machine (all cores, not idle). Differences over a window give cores
    used."""

    server: float
    postgres: float
    machine: float

    def __sub__(self, other: CpuTimes) -> CpuTimes:
        return CpuTimes(
            self.server - other.server,
            self.postgres - other.postgres,
            self.machine - other.machine,
        )


NOISY_CORES = 0.25


def cpu_note(used: CpuTimes, client: float, seconds: float) -> str:
    """One line on where the machine's CPU went over ``seconds``, with a warning when other
    processes (not the client, the API server or PostgreSQL) took a noticeable share of it."""
    other = max(0.0, used.machine - used.server - used.postgres - client) / seconds
    line = (
        f"CPU cores used while measuring (of {cpu_count()}): client {client / seconds:.2f}, "
        f"server {used.server / seconds:.2f}, postgres {used.postgres / seconds:.2f}, "
        f"other {other:.2f}"
    )
    if other > NOISY_CORES:
        line += (
            f"\nWARNING: other processes used {other:.2f} cores during the measurement; "
            "these figures are noisy. Rerun on a quiet machine."
        )
    return line


def cpu_times(server_group: int) -> CpuTimes:
    tick = os.sysconf("SC_CLK_TCK")
    server_cpu = postgres_cpu = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited meanwhile
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        used = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        if int(fields[2]) == server_group:  # its own process group: main process and workers
            server_cpu += used
        elif name == "postgres":
            postgres_cpu += used
    return CpuTimes(server_cpu, postgres_cpu, machine_busy())


def machine_busy() -> float:
    """CPU seconds so far that the machine's cores spent on anything but idling."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")  # not idle, iowait


def listener_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1:``port`` (or any address), if this user can see it:
    its listening socket's inode in /proc/net/tcp*, then the process holding that inode."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                # local address "ADDR:PORT" in hex; state 0A is LISTEN
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return int(entry.name)
    return None


def process_cpu(pid: int) -> float:
    """CPU seconds one process (all its threads) has used so far; 0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def api_server(
    url: str,
    *,
    bench_routes: bool = False,
    app: str = "storage_service.wsgi:application",
    settings_module: str = SETTINGS_MODULE,
    ready_path: str = "/v1/me",
) -> Iterator[Server]:
    """The API server as ``scripts/devservices.py run`` starts it, on a free 127.0.0.1 port.

    Workers and threads come from storage_service/serving.py, as for ``make run``; the
    command line is devservices' (no access log: the service logs each request itself, as one
    JSON line). Here its output goes to a temporary file, shown if it fails. ``app`` and
    ``settings_module`` serve another app (the benchmark's references, bench/reference/) with
    the very same server settings.
    """
    port = free_port()
    workers = web_workers()
    extra = {
        "SERVICE_BENCH_ROUTES": "true" if bench_routes else "false",
        "WEB_CONCURRENCY": str(workers),  # read by storage_service/serving.py
        # The limiter stays on (its Redis round trip is part of every request's cost), with
        # budgets no benchmark reaches.
        "SERVICE_RATE_LIMIT_READS_PER_MINUTE": str(10**9),
        "SERVICE_RATE_LIMIT_WRITES_PER_MINUTE": str(10**9),
        "SERVICE_RATE_LIMIT_TOKEN_READS_PER_MINUTE": str(10**9),
        "SERVICE_RATE_LIMIT_TOKEN_WRITES_PER_MINUTE": str(10**9),
        "DJANGO_SETTINGS_MODULE": settings_module,
        # The reference app lives in bench/.
        "PYTHONPATH": os.pathsep.join([str(ROOT / "bench"), str(ROOT)]),
    }
    log_dir = Path(tempfile.mkdtemp(prefix="bench-api-"))
    log_path = log_dir / "api.log"
    # `make run`'s own command line: every setting but the address is in storage_service/serving.py.
    from scripts.devservices import api_command

    cmd = [str(part) for part in api_command(port, app=app)]
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=server_environment(url, **extra),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopping it stops the workers
        )
    server = Server(f"http://127.0.0.1:{port}", port, workers, proc, log_path, app)
    try:
        _wait_ready(server, ready_path)
        log(f"started {server.describe()}")
        yield server
    finally:
        _stop(proc)
        with contextlib.suppress(OSError):
            log_path.unlink()
            log_dir.rmdir()


def _wait_ready(server: Server, ready_path: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if server.proc.poll() is not None:
            _print_log(server.log_path)
            raise SystemExit(f"the API server exited with code {server.proc.returncode}")
        try:
            with urllib.request.urlopen(f"{server.base_url}{ready_path}", timeout=2):
                pass
            return
        except urllib.error.HTTPError:
            return  # 401 without a key: the application answers
        except OSError:
            pass
        if time.monotonic() > deadline:
            _print_log(server.log_path)
            raise SystemExit(f"the API server did not answer within {timeout:.0f} s")
        time.sleep(0.2)


def _print_log(path: Path, lines: int = 40) -> None:
    with contextlib.suppress(OSError):
        for line in path.read_text(errors="replace").splitlines()[-lines:]:
            print(f"api | {line}", file=sys.stderr)


def _stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    # Workers outlive the master only briefly; make sure none is left in the group.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


# --- Statistics and output ------------------------------------------------------------------


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of ``samples``."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, left: Sequence[int] = (0,)
) -> str:
    """A plain-text table; columns in ``left`` are left-aligned, the others (figures) right."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(width) if index in left else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *map(line, rows)])


def fresh_project(url: str, *, prefix: str, rows: int) -> Any:
    """A new project named ``prefix<time>`` with ``rows`` seeded files, after removing the
    projects of earlier (crashed) runs with that prefix."""
    from accounts.models import Project
    from accounts.services import project_create

    for old in Project.objects.filter(name__startswith=prefix).values_list("id", flat=True):
        log(f"removing the leftover project {old}")
        delete_project(url, old)
    project = project_create(name=f"{prefix}{int(time.time())}")
    seed_files(
        url,
        project_id=project.id,
        object_id=shared_object(project.id),
        rows=rows,
        rebuild_indexes=False,
    )
    return project
