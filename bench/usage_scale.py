"""What the storage quota costs a large tenant: ``held_bytes`` (the quota's sum, also behind
``GET /v1/usage``) and an upload start with a quota, at 200,000 and 1,000,000 objects.

For each size, one project gets that many live objects of its test mode (one
``INSERT ... SELECT generate_series``, then ``VACUUM ANALYZE``) and a storage quota. Then:

- ``held_bytes``: median of --calls calls in this process (Django, one query each);
- upload start: POST /v1/files/upload with the in-process Django test client (the server's
  own time, no HTTP), median of --starts requests, each locking the limits row and summing;
- parallel starts: --threads threads, each with its own connection, start uploads of that
  one tenant for --seconds; starts per second. They all serialize on the tenant's limits row,
  so this is the rate the quota allows one tenant;
- ``held_bytes`` again after those starts, each of which added a usage row (files/usage.py)
  that no fold has folded yet: what the sum reads between two folds.

    .venv/bin/python -m scripts.devservices exec -- .venv/bin/python -m bench.usage_scale
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time

from bench._common import (
    bench_database_url,
    connect,
    delete_project,
    ensure_database,
    log,
    setup_django,
)

PREFIX = "bench-usage-scale-"

_SEED = """
INSERT INTO files_storedobject
    (project_id, mode, storage_key, state, declared_type, declared_size, size, created_at)
SELECT %s, 'test', %s || '/seed-' || n, 'live', 'application/octet-stream', 1000, 1000, now()
FROM generate_series(1, %s) AS n
"""


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


_BODY = {"filename": "a.txt", "contentType": "text/plain", "size": 10}


def upload_starts(key: str, count: int) -> list[float]:
    from rest_framework.test import APIClient

    client = APIClient(HTTP_HOST="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    times = []
    for _ in range(count):
        started = time.perf_counter()
        response = client.post("/v1/files/upload", _BODY, format="json")
        times.append(time.perf_counter() - started)
        assert response.status_code == 201, response.content
    return times


def parallel_starts(key: str, threads: int, seconds: float) -> float:
    """Upload starts per second of ``threads`` clients of one tenant at once."""
    from django.db import connection
    from rest_framework.test import APIClient

    barrier = threading.Barrier(threads + 1)
    done = [0] * threads
    stop = threading.Event()

    def run(index: int) -> None:
        client = APIClient(HTTP_HOST="localhost")
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        try:
            barrier.wait()
            while not stop.is_set():
                response = client.post("/v1/files/upload", _BODY, format="json")
                assert response.status_code == 201, response.content
                done[index] += 1
        finally:
            connection.close()

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    started = time.monotonic()
    time.sleep(seconds)
    stop.set()
    for thread in pool:
        thread.join()
    return sum(done) / (time.monotonic() - started)


def held_times(tenant_: object, count: int) -> tuple[float, int]:
    from files.usage import held_bytes

    times = []
    held = 0
    for _ in range(count):
        started = time.perf_counter()
        held = held_bytes(tenant=tenant_)  # type: ignore[arg-type]
        times.append(time.perf_counter() - started)
    return statistics.median(times), held


def delta_rows(url: str, project_id: str) -> str:
    with connect(url) as conn:
        if conn.execute("SELECT to_regclass('files_usagedelta')").fetchone() == (None,):
            return "no usage rows"
        row = conn.execute(
            "SELECT count(*) FROM files_usagedelta WHERE project_id = %s", (project_id,)
        ).fetchone()
    return f"{row[0] if row else 0:,} usage rows unfolded"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--starts", type=int, default=50)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()

    url = bench_database_url()
    ensure_database(url)
    setup_django(url)
    logging.getLogger("storage_service.requests").setLevel(logging.WARNING)
    from accounts.models import Project
    from accounts.tenancy import Tenant

    for old in Project.objects.filter(name__startswith=PREFIX).values_list("id", flat=True):
        delete_project(url, old)
    print(
        f"held_bytes: median of {args.calls}; upload start (POST /v1/files/upload, quota set): "
        f"median of {args.starts}; parallel: {args.threads} threads for {args.seconds:g} s"
    )
    for objects in args.objects:
        project_id, key = tenant(objects, url)
        try:
            one = Tenant(project=Project.objects.get(pk=project_id), mode="test")
            held_time, held = held_times(one, args.calls)
            start_time = statistics.median(upload_starts(key, args.starts))
            rate = parallel_starts(key, args.threads, args.seconds)
            print(
                f"  {objects:>9,} objects: held_bytes {ms(held_time)} ({held:,} bytes); "
                f"upload start {ms(start_time)}; parallel starts {rate:,.0f}/s"
            )
            # Every start added a usage row; before a fold, held_bytes reads them all.
            after, _ = held_times(one, args.calls)
            print(
                f"{'':>14}after the starts ({delta_rows(url, project_id)}): held_bytes {ms(after)}"
            )
        finally:
            delete_project(url, project_id)


if __name__ == "__main__":
    main()
