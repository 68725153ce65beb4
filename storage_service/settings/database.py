"""How the service reaches PostgreSQL: DATABASES["default"] from DATABASE_URL, the pooling
mode, and the server-side timeouts each session starts with."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

from storage_service.env import env_int, env_str

# The settings (base.py takes them as its own); the functions are imported by name.
__all__ = [
    "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS",
    "DATABASE_POOLING",
    "DATABASE_POOL_SIZE",
    "DATABASE_STATEMENT_TIMEOUT_MS",
]

# How the service reaches PostgreSQL: "direct" (or a session-mode pooler), or "transaction"
# for PgBouncer in transaction pooling mode, where consecutive transactions of one Django
# connection may run on different server sessions (docs/operations.md, "Connection pooling").
DATABASE_POOLING = env_str("DATABASE_POOLING", "direct")
if DATABASE_POOLING not in {"direct", "transaction"}:
    raise ImproperlyConfigured(
        f"DATABASE_POOLING must be direct or transaction, got {DATABASE_POOLING!r}"
    )

# Connections a process keeps open in Django's connection pool (psycopg_pool), at most this
# many; 0, the default, keeps Django's persistent connections instead (CONN_MAX_AGE). A
# Celery worker of threads wants the pool: Celery closes every connection a task used when
# the task ends (its Django fix-up, celery.fixups.django), so without one each task
# connects anew, and PostgreSQL forks, authenticates and warms a backend for every webhook
# batch. With the pool, that close hands the connection back, open, for the next task. The
# webhook worker's commands set it to its threads and a few more (scripts/devservices.py).
DATABASE_POOL_SIZE = env_int("DATABASE_POOL_SIZE", 0, minimum=0)


def _split_hosts(hostlist: str) -> tuple[str, str]:
    """libpq's ``host1:port1,host2:port2`` as its ``host`` and ``port`` lists (an empty port
    is the default one); ``[::1]:5432`` for IPv6."""
    hosts: list[str] = []
    ports: list[str] = []
    for item in hostlist.split(","):
        host, port = item, ""
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port = rest.removeprefix(":")
        elif ":" in item:
            host, _, port = item.rpartition(":")
        if port and not port.isdigit():
            raise ImproperlyConfigured(f"DATABASE_URL has a bad port {port!r}")
        hosts.append(unquote(host))
        ports.append(port)
    return ",".join(hosts), ",".join(ports) if any(ports) else ""


def database_from_url(url: str) -> dict[str, object]:
    """Django DATABASES entry from ``postgres://user:pass@host:port/name?sslmode=...``.

    A host starting with ``/`` (or ``%2F``) is a unix-socket directory, which is how the
    embedded PostgreSQL fallback answers. Several hosts (``h1:5432,h2:5432``) are tried in
    turn by libpq; with ``?target_session_attrs=read-write`` it keeps the one that accepts
    writes, which is how the service finds the new primary after a failover.
    """
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise ImproperlyConfigured(f"DATABASE_URL must be a postgres:// URL, got {url!r}")
    name = unquote(parsed.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured("DATABASE_URL must name a database")
    query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    userinfo, _, hostlist = parsed.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    host, port = _split_hosts(hostlist) if hostlist else ("", "")
    if "host" in query:
        host = query.pop("host")
    options: dict[str, object] = dict(query)
    # Without it a connect to an unreachable host waits for the kernel's TCP timeout (minutes);
    # the API would hang instead of answering 503 while PostgreSQL is away.
    options.setdefault("connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=1))
    # Parameters bound by the server, and a statement run this many times on a connection
    # prepared (parsed and planned once): every request runs the same few statements. A
    # named prepared statement lives in one server session, so a transaction-mode pooler
    # turns preparing off (an unnamed statement of the extended protocol is fine there).
    options.setdefault("server_side_binding", True)
    threshold = env_int("DATABASE_PREPARE_THRESHOLD", 2, minimum=0)
    if DATABASE_POOLING == "transaction":
        threshold = 0
    options.setdefault("prepare_threshold", threshold or None)
    database: dict[str, object] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(user),
        "PASSWORD": unquote(password),
        "HOST": host,
        "PORT": port,
        # Persistent connections: the API answers most requests with two or three queries, so
        # a fresh connection per request would dominate latency.
        "CONN_MAX_AGE": env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0),
        # A reused connection is checked (Django's SELECT 1) before a request's first query,
        # so one that PostgreSQL closed (a restart, a failover) is replaced instead of
        # failing the request.
        "CONN_HEALTH_CHECKS": True,
        # A server-side cursor (QuerySet.iterator() outside a transaction) outlives the
        # transaction that declared it, so it would be lost on the next pooled session.
        "DISABLE_SERVER_SIDE_CURSORS": DATABASE_POOLING == "transaction",
        "OPTIONS": options,
    }
    if DATABASE_POOL_SIZE:
        pooled(database)
    return database


def pooled(database: dict[str, object]) -> None:
    """Connections from Django's pool, DATABASE_POOL_SIZE at most. With CONN_HEALTH_CHECKS on,
    Django has the pool check a connection before handing it out (psycopg_pool's
    ``check_connection``); one idle for ten minutes is closed. Django refuses a pool beside
    persistent connections, hence CONN_MAX_AGE 0."""
    options = database["OPTIONS"]
    assert isinstance(options, dict)
    options["pool"] = {
        "min_size": 1,
        "max_size": DATABASE_POOL_SIZE,
        "max_idle": 600,
        # A task waits this long for a connection when all are taken, then fails as a
        # connect that timed out would.
        "timeout": float(str(options["connect_timeout"])),
    }
    database["CONN_MAX_AGE"] = 0


# PostgreSQL cuts any statement running (or waiting for a lock) longer than this, and ends a
# session left idle inside a transaction longer than that (its locks go with it). Both in
# milliseconds; 0 turns one off (e.g. DATABASE_STATEMENT_TIMEOUT_MS=0 for a long migration).
DATABASE_STATEMENT_TIMEOUT_MS = env_int("DATABASE_STATEMENT_TIMEOUT_MS", 15_000, minimum=0)
DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS = env_int(
    "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", 60_000, minimum=0
)


def with_session_timeouts(database: dict[str, object]) -> dict[str, object]:
    """A DATABASES entry whose connections start with the two timeouts above."""
    options = database["OPTIONS"]
    assert isinstance(options, dict)
    # Sent as startup options of each connection. PgBouncer refuses the ``options`` startup
    # parameter, and a setting of one server session would not follow the client to the next:
    # in transaction pooling the two timeouts are the role's (ALTER ROLE ... SET, applied to
    # every server session the pooler opens), as docs/operations.md shows.
    if DATABASE_POOLING == "direct":
        options["options"] = " ".join(
            part
            for part in (
                str(options.get("options", "")),
                f"-c statement_timeout={DATABASE_STATEMENT_TIMEOUT_MS}",
                f"-c idle_in_transaction_session_timeout={DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS}",
            )
            if part
        )
    return database
