"""Helpers shared by the benchmarks: the bench database, bulk seeding, the server, statistics.

The benchmarks never touch the development database: they work in their own database, named
after the dev one with ``_bench`` appended (``storage_service_bench``), or the one given by
``BENCH_DATABASE_URL``. The API server is started exactly as ``scripts/devservices.py run``
starts it (storage_service/serving.py: same settings module, workers and threads), bound to a
free port on 127.0.0.1.

A benchmark imports this module alone (``from bench import _common as bench``); each concept
lives in a module of its own: ``_env`` (paths, settings, log), ``_database``, ``_seed``,
``_server`` (the API under test and the CPU it uses) and ``_stats``.
"""

from __future__ import annotations

from bench._database import (
    bench_database_url,
    connect,
    create_database,
    database_exists,
    database_name,
    ensure_database,
    migrate,
)
from bench._env import (
    BENCH_SUFFIX,
    DEBUG_ENVIRONMENT,
    DEFAULT_DATABASE_URL,
    ROOT,
    SETTINGS_MODULE,
    VENV_BIN,
    log,
    server_environment,
    setup_django,
)
from bench._seed import (
    TEAMS,
    YEARS,
    crockford,
    delete_project,
    file_id_sql,
    fresh_project,
    seed_files,
    seed_files_sql,
    shared_object,
)
from bench._server import (
    NOISY_CORES,
    CpuTimes,
    ProcessStat,
    Server,
    api_server,
    cpu_count,
    cpu_note,
    cpu_times,
    free_port,
    listener_pid,
    machine_busy,
    process_cpu,
    process_stat,
    process_stats,
    web_workers,
    worker_line,
)
from bench._stats import percentile, table

__all__ = [
    "BENCH_SUFFIX",
    "DEBUG_ENVIRONMENT",
    "DEFAULT_DATABASE_URL",
    "NOISY_CORES",
    "ROOT",
    "SETTINGS_MODULE",
    "TEAMS",
    "VENV_BIN",
    "YEARS",
    "CpuTimes",
    "ProcessStat",
    "Server",
    "api_server",
    "bench_database_url",
    "connect",
    "cpu_count",
    "cpu_note",
    "cpu_times",
    "create_database",
    "crockford",
    "database_exists",
    "database_name",
    "delete_project",
    "ensure_database",
    "file_id_sql",
    "free_port",
    "fresh_project",
    "listener_pid",
    "log",
    "machine_busy",
    "migrate",
    "percentile",
    "process_cpu",
    "process_stat",
    "process_stats",
    "seed_files",
    "seed_files_sql",
    "server_environment",
    "setup_django",
    "shared_object",
    "table",
    "web_workers",
    "worker_line",
]
