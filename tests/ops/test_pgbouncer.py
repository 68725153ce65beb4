"""The end-to-end flows through PgBouncer in transaction pooling mode: consecutive transactions
of one Django connection land on different server sessions, so anything the service kept in a
session (a prepared statement, a SET, a session advisory lock, LISTEN, a server-side cursor
across transactions) would fail or leak here.

The lifecycle, multipart, folder-job and webhook modules of tests/e2e run in a pytest of their
own, whose database, API servers and Celery workers all connect through one PgBouncer with
``DATABASE_POOLING=transaction``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from tests.servers import ROOT, free_port

pytestmark = [pytest.mark.slow]

E2E_MODULES = [
    "tests/e2e/test_file_lifecycle.py",
    "tests/e2e/test_multipart.py",
    "tests/e2e/test_folder_jobs.py",
    "tests/e2e/test_webhooks.py",
]
PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
# PgBouncer refuses to run as root; it drops to this user, which must read its files.
RUN_AS = "postgres"


def pgbouncer_ini(port: int, host: str, db_port: int, user: str, logfile: Path) -> str:
    return f"""\
[databases]
* = host={host} port={db_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
admin_users = {user}
auth_file = {logfile.parent / "userlist.txt"}
pool_mode = transaction
default_pool_size = 20
max_client_conn = 500
server_reset_query =
log_connections = 0
log_disconnections = 0
logfile = {logfile}
"""


@pytest.fixture
def pgbouncer() -> Iterator[int]:
    if not os.path.exists(PGBOUNCER):
        pytest.fail("pgbouncer is not installed: `make test-slow` installs it (apt-get)")
    db = settings.DATABASES["default"]
    host = str(db["HOST"] or "127.0.0.1")
    if host.startswith("/"):
        pytest.skip("the embedded PostgreSQL listens on a unix socket only")
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    workdir.chmod(0o755)
    user = str(db["USER"] or "postgres")
    (workdir / "userlist.txt").write_text(f'"{user}" ""\n')
    ini = workdir / "pgbouncer.ini"
    ini.write_text(pgbouncer_ini(port, host, int(str(db["PORT"] or 5432)), user, workdir / "log"))
    for path in workdir.iterdir():
        path.chmod(0o644)
    command = [PGBOUNCER, "-q", str(ini)]
    if os.geteuid() == 0:
        command[1:1] = ["-u", RUN_AS]
        shutil.chown(workdir, RUN_AS)
    process = subprocess.Popen(command)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = workdir / "log"
                    raise RuntimeError(
                        f"pgbouncer did not start: {log.read_text() if log.exists() else ''}"
                    ) from None
                time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def test_the_e2e_flows_pass_through_pgbouncer_in_transaction_mode(pgbouncer: int) -> None:
    db = settings.DATABASES["default"]
    name = f"{db['NAME']}_pgbouncer"
    # pytest-django names its database after this one, plus the xdist worker's suffix.
    test_database = f"test_{name}_gw0"
    user = str(db["USER"] or "postgres")
    url = f"postgres://{user}@127.0.0.1:{pgbouncer}/{name}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DATABASE_POOLING": "transaction",
        "DATABASE_CONN_MAX_AGE": "60",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_TESTRUNUID", None)
    # One xdist worker, gw0: its queues, bucket and workers' names are apart from this
    # pytest's. --reuse-db: PgBouncer keeps server sessions open on the test database, so
    # pytest-django's DROP DATABASE would be refused; it is dropped here, directly.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "1",
            "--reuse-db",
            "-p",
            "no:cacheprovider",
            "-q",
            "-x",
            *E2E_MODULES,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    # The flows' transactions went through the pooler, on few server sessions.
    # (The admin console speaks the simple query protocol only: a ClientCursor's.)
    with psycopg.connect(
        host="127.0.0.1",
        port=pgbouncer,
        user=user,
        dbname="pgbouncer",
        autocommit=True,
        cursor_factory=psycopg.ClientCursor,
    ) as admin:
        cursor = admin.execute("SHOW STATS")
        stats = cursor.fetchall()
        columns = [column.name for column in cursor.description or []]
    transactions = {
        row[columns.index("database")]: row[columns.index("total_xact_count")] for row in stats
    }
    direct = psycopg.connect(
        host=str(db["HOST"] or "127.0.0.1"),
        port=int(str(db["PORT"] or 5432)),
        user=user,
        password=str(db["PASSWORD"] or "") or None,
        dbname="postgres",
        autocommit=True,
    )
    with direct:
        direct.execute(f'DROP DATABASE IF EXISTS "{test_database}" WITH (FORCE)')
    output = run.stdout[-6000:] + run.stderr[-3000:]
    assert run.returncode == 0, output
    assert " passed" in run.stdout and " failed" not in run.stdout, output
    assert transactions.get(test_database, 0) > 1000, transactions
