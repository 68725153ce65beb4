"""What the storage quota and the usage cost for a large tenant, and whether the usage
counters make concurrent writers of one tenant wait for each other.

1. Upload start with a quota: POST /v1/files/upload (in-process Django test client, so the
   figure is the server's own time) for a tenant of 10 stored objects and one of 200,000
   (seeded with one INSERT ... SELECT generate_series, counted by the triggers), median of
   --starts requests each; beside it, the scan the quota made before the counters (the sum
   over the tenant's storedobject_held entries) and the read of the counters that replaced it,
   on the same tenants: server-side execution time and buffers touched (EXPLAIN ANALYZE).
2. Writers of one tenant at once: --threads connections each insert --inserts pending
   objects of the same tenant, one per transaction; rows per second with the counters as
   they are (16 slots), with one slot for everybody (the hot row the slots avoid) and with
   the triggers disabled (no counting at all). Each transaction stays open --hold-ms after
   its insert, as an upload start's does for its other rows. On the bench database only.
3. What the files triggers add to a bulk statement: one UPDATE of --move-rows files' paths
   (seeded by bench/_common.seed_files), with the triggers and without, rolled back.

    .venv/bin/python scripts/devservices.py exec -- .venv/bin/python bench/usage_scale.py
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time
import uuid

from _common import (
    bench_database_url,
    connect,
    delete_project,
    ensure_database,
    fresh_project,
    log,
    setup_django,
)

PREFIX = "bench-usage-scale-"

_OLD_SCAN = """
SELECT coalesce(sum(CASE WHEN state = 'pending' THEN declared_size ELSE coalesce(size, 0) END), 0)
FROM files_storedobject
WHERE project_id = %s AND mode = 'test' AND state IN ('pending', 'live', 'discarded')
"""

_SEED = """
INSERT INTO files_storedobject
    (project_id, mode, storage_key, state, declared_type, declared_size, size, created_at)
SELECT %s, 'test', %s || '/seed-' || n, 'live', 'application/octet-stream', 1000, 1000, now()
FROM generate_series(1, %s) AS n
"""

_FUNCTIONS = """
SELECT pg_get_functiondef(p.oid) FROM pg_proc p
WHERE p.proname LIKE 'files\\_usage\\_%' AND p.prorettype = 'trigger'::regtype
"""
SLOT = "pg_backend_pid() % 16"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def tenant(objects: int, url: str) -> tuple[str, str]:
    """A project with ``objects`` live objects, a quota and a test key: (project id, key)."""
    from accounts.limits import limits_set
    from accounts.services import api_key_issue, project_create

    project = project_create(name=f"{PREFIX}{objects}-{int(time.time())}")
    started = time.monotonic()
    with connect(url) as conn:
        conn.execute(_SEED, (project.id, project.id, objects))
        conn.commit()
    with connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) files_storedobject")
    log(f"seeded {objects:,} objects in {time.monotonic() - started:.1f} s")
    limits_set(project=project, mode="test", changes={"max_storage_bytes": 10**15})
    issued = api_key_issue(project=project, environment="test")
    return project.id, issued.raw_key


def upload_starts(key: str, count: int) -> list[float]:
    from rest_framework.test import APIClient

    client = APIClient(HTTP_HOST="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    body = {"filename": "a.txt", "contentType": "text/plain", "size": 10}
    times = []
    for _ in range(count):
        started = time.perf_counter()
        response = client.post("/v1/files/upload", body, format="json")
        times.append(time.perf_counter() - started)
        assert response.status_code == 201, response.content
    return times


_COUNTERS = """
SELECT coalesce(sum(stored_bytes + pending_bytes), 0) FROM files_usagecounter
WHERE project_id = %s AND mode = 'test'
"""


def explained(url: str, query: str, project_id: str, count: int) -> tuple[float, int]:
    """The query's median execution time (server side) and the buffers it touches."""
    times = []
    with connect(url) as conn:
        for _ in range(count):
            row = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query, (project_id,)
            ).fetchone()
            assert row is not None
            plan = row[0][0]
            times.append(plan["Execution Time"] / 1000)
            buffers = plan["Plan"]["Shared Hit Blocks"] + plan["Plan"]["Shared Read Blocks"]
    return statistics.median(times), buffers


def writers(url: str, project_id: str, threads: int, inserts: int, hold: float) -> float:
    """Rows per second of ``threads`` connections inserting pending objects of one tenant."""
    barrier = threading.Barrier(threads + 1)

    def run() -> None:
        with connect(url) as conn:
            barrier.wait()
            for _ in range(inserts):
                conn.execute(
                    "INSERT INTO files_storedobject (project_id, mode, storage_key, state,"
                    " declared_type, declared_size, created_at) VALUES"
                    " (%s, 'test', %s, 'pending', 'text/plain', 10, now())",
                    (project_id, f"{project_id}/w-{uuid.uuid4().hex}"),
                )
                if hold:
                    # The rest of an upload start's transaction (its file row, its event).
                    conn.execute("SELECT pg_sleep(%s)", (hold,))
                conn.commit()

    pool = [threading.Thread(target=run) for _ in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    started = time.monotonic()
    for thread in pool:
        thread.join()
    return threads * inserts / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=200_000)
    parser.add_argument("--starts", type=int, default=200)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--inserts", type=int, default=300)
    parser.add_argument("--hold-ms", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--move-rows", type=int, default=20_000)
    args = parser.parse_args()

    url = bench_database_url()
    ensure_database(url)
    setup_django(url)
    logging.getLogger("storage_service.requests").setLevel(logging.WARNING)
    from accounts.models import Project
    from accounts.tenancy import Tenant
    from files.usage import held_bytes

    for old in Project.objects.filter(name__startswith=PREFIX).values_list("id", flat=True):
        delete_project(url, old)
    small, small_key = tenant(10, url)
    large, large_key = tenant(args.objects, url)
    try:
        print(f"upload start with a quota (median of {args.starts}; sums: median of 20)")
        for label, project_id, key in (
            ("10", small, small_key),
            (f"{args.objects:,}", large, large_key),
        ):
            starts = statistics.median(upload_starts(key, args.starts))
            now, now_buffers = explained(url, _COUNTERS, project_id, 20)
            before, before_buffers = explained(url, _OLD_SCAN, project_id, 20)
            held = held_bytes(
                tenant=Tenant(project=Project.objects.get(pk=project_id), mode="test")
            )
            print(
                f"  {label:>9} objects: POST /v1/files/upload {ms(starts)}; the quota's sum "
                f"{ms(now)}, {now_buffers} buffers (the scan it replaced: {ms(before)}, "
                f"{before_buffers:,} buffers); held {held:,} bytes"
            )

        print(
            f"pending inserts of one tenant, {args.threads} connections at once (rows/s, "
            f"{args.rounds} rounds)"
        )
        with connect(url, autocommit=True) as conn:
            functions = [row[0] for row in conn.execute(_FUNCTIONS).fetchall()]
            assert functions and all(SLOT in f for f in functions), "trigger functions not found"
            rates: dict[str, list[float]] = {"16 slots": [], "1 slot": [], "no triggers": []}
            for _ in range(args.rounds):
                for label, samples in rates.items():
                    if label == "1 slot":
                        for function in functions:
                            conn.execute(function.replace(SLOT, "0"))
                    if label == "no triggers":
                        conn.execute("ALTER TABLE files_storedobject DISABLE TRIGGER USER")
                    try:
                        hold = args.hold_ms / 1000
                        samples.append(writers(url, small, args.threads, args.inserts, hold))
                    finally:
                        for function in functions:
                            conn.execute(function)
                        conn.execute("ALTER TABLE files_storedobject ENABLE TRIGGER USER")
            for label, samples in rates.items():
                shown = ", ".join(f"{rate:,.0f}" for rate in samples)
                print(f"  {label:>11}: median {statistics.median(samples):,.0f} ({shown})")
            # What the counting costs one statement: one connection alone, nothing held.
            alone: dict[str, list[float]] = {"triggers": [], "no triggers": []}
            for _ in range(args.rounds):
                for label, samples in alone.items():
                    if label == "no triggers":
                        conn.execute("ALTER TABLE files_storedobject DISABLE TRIGGER USER")
                    try:
                        samples.append(1e6 / writers(url, small, 1, args.inserts, 0))
                    finally:
                        conn.execute("ALTER TABLE files_storedobject ENABLE TRIGGER USER")
            print("one connection alone (µs per insert and commit)")
            for label, samples in alone.items():
                shown = ", ".join(f"{sample:,.0f}" for sample in samples)
                print(f"  {label:>11}: median {statistics.median(samples):,.0f} ({shown})")

        print(f"one UPDATE of {args.move_rows:,} files' paths (a folder move's statement; ms)")
        moved = fresh_project(url, prefix=f"{PREFIX}move-", rows=args.move_rows)
        try:
            print_move(url, moved.id, args.rounds)
        finally:
            delete_project(url, moved.id)
    finally:
        for project_id in (small, large):
            delete_project(url, project_id)


def print_move(url: str, project_id: str, rounds: int) -> None:
    """The statement's time with the files triggers and without, round-robin, rolled back."""
    times: dict[str, list[float]] = {"triggers": [], "no triggers": []}
    with connect(url, autocommit=True) as conn:
        for _ in range(rounds):
            for label, samples in times.items():
                if label == "no triggers":
                    conn.execute("ALTER TABLE files_file DISABLE TRIGGER USER")
                try:
                    conn.execute("BEGIN")
                    started = time.perf_counter()
                    conn.execute(
                        "UPDATE files_file SET path = 'moved/' || coalesce(path, ''),"
                        " updated_at = now() WHERE project_id = %s",
                        (project_id,),
                    )
                    samples.append(time.perf_counter() - started)
                    conn.execute("ROLLBACK")
                finally:
                    conn.execute("ALTER TABLE files_file ENABLE TRIGGER USER")
    for label, samples in times.items():
        shown = ", ".join(f"{sample * 1000:,.0f}" for sample in samples)
        print(f"  {label:>11}: median {statistics.median(samples) * 1000:,.0f} ({shown})")


if __name__ == "__main__":
    main()
