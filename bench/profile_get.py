"""Where one GET /v1/files/<id> spends its time, in-process: the WSGI application called
directly (no network, no HTTP server), 3 x 2,000 requests timed, then 2,000 under cProfile.

    .venv/bin/python -m bench.profile_get [--requests 2000] [--top 25]
        [--endpoint get|list|upload|resolve] [--role api|delivery] [--instructions]

Prints the mean wall time and CPU time (this process: Python, not PostgreSQL or Redis) per
request (median and range of the 3 timed runs), the SQL statements one request sends, then the
cumulative time per request of the parts named in docs/performance.md (key lookup, file
query, rate-limit count, request log, rendering, middleware), and the top functions by their
own time. cProfile's overhead inflates every figure by a similar factor: read the shares, not
the absolute times, from the profile. ``resolve`` is a delivery URL of a ready variant
(``GET /d/…``, a 302 to the store): it also lists the Redis commands and store calls one
resolution makes. ``--role delivery`` serves the request as a delivery server does
(``SERVICE_ROLE=delivery``: only /d/ and the probes, behind the middleware a resolution
needs); the default is the API, which answers /d/ too. Uses the bench database with a fresh
project of its own (api_throughput's: the list is 20 of a folder of 100), deleted afterwards.

``--instructions`` counts instead the CPU instructions this process spends per request
(valgrind's callgrind): the same count run after run whatever else the machine is doing, where
times swing with the load. It measures a change to the Python path; what PostgreSQL and Redis
spend is not in it. Only what runs inside the timed loop is counted: the loop is the one call
of ``operator.call`` in the process, and callgrind collects only inside that C function
(``--toggle-collect``), so neither the setup nor the warm-up leaks in, however late
``callgrind_control`` is heard under load.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import operator
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench import _common as bench
from bench import api_throughput as throughput

# (label, file suffix, function name): cumulative time of these, per request.
PARTS = [
    ("whole request (WSGI application)", "django/core/handlers/wsgi.py", "__call__"),
    ("key lookup (SQL), every route but GET", "accounts/selectors.py", "api_key_resolve"),
    ("GET: key and file (SQL)", "files/selectors.py", "file_shown_with_key"),
    ("file query (SQL), the other routes", "files/selectors.py", "file_get"),
    ("rate-limit count (Redis)", "accounts/throttling.py", "allow_request"),
    ("request log line", "logging/__init__.py", "info"),
    ("JSON rendering", "rest_framework/renderers.py", "render"),
    ("shape (file_json)", "files/serializers.py", "file_json"),
    ("DRF dispatch (view, auth, throttle, render)", "rest_framework/views.py", "dispatch"),
    ("URL resolving", "django/urls/resolvers.py", "resolve"),
    ("psycopg execute (all SQL)", "django/db/backends/utils.py", "execute"),
    ("redis execute (all Redis)", "redis/client.py", "execute"),
    ("close_old_connections (request_finished)", "django/db/__init__.py", "close_old_connections"),
    ("delivery: resolution", "delivery/resolution.py", "delivery_resolve"),
    ("delivery: key, file and variant (SQL)", "delivery/selectors.py", "resolution_rows"),
    ("delivery: signature check", "delivery/signing.py", "signature_matches"),
    ("delivery: budget (lease, Redis)", "delivery/resolution.py", "_within_budget"),
    ("delivery: presigned Location", "objectstore/__init__.py", "signed_get_url"),
    ("delivery: bandwidth (batch)", "accounts/bandwidth.py", "count"),
    ("delivery: bandwidth batch sent (Redis)", "accounts/bandwidth.py", "flush"),
    ("middleware: sessions", "django/contrib/sessions/middleware.py", "process_response"),
]


def wsgi_get(
    application: Callable[..., Any], path: str, key: str, body: bytes | None = None
) -> Callable[[], int]:
    path, _, query = path.partition("?")
    environ_base = {
        "REQUEST_METHOD": "GET" if body is None else "POST",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body or b"")),
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Bearer {key}",
        "HTTP_ACCEPT": "application/json",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "SERVER_PROTOCOL": "HTTP/1.1",
    }
    status: list[str] = []

    def start_response(code: str, headers: list[tuple[str, str]]) -> None:
        status.append(code)

    def one() -> int:
        status.clear()
        environ = dict(environ_base, **{"wsgi.input": io.BytesIO(body or b"")})
        answer = application(environ, start_response)
        b"".join(answer)
        answer.close()
        return int(status[0].split()[0])

    return one


class RoundTrips:
    def __init__(self) -> None:
        self.redis: list[str] = []
        self.store: list[str] = []


@contextlib.contextmanager
def round_trips() -> Iterator[RoundTrips]:
    """Record the Redis commands of this process's database (Redis's own MONITOR, read in a
    thread; MULTI and EXEC included) and the store's HTTP requests (botocore's
    ``before-send`` event) made inside the block."""
    import threading

    import redis
    from django.conf import settings

    from storage_service import objectstore

    trips = RoundTrips()
    watched = redis.Redis.from_url(settings.REDIS_URL)
    database = watched.connection_pool.connection_kwargs.get("db", 0)
    stop = threading.Event()
    ready = threading.Event()

    def watch() -> None:
        with watched.monitor() as monitor:
            ready.set()
            for seen in monitor.listen():
                if stop.is_set() and seen["command"] == "PING":
                    return
                if seen["db"] == database and seen["command"] != "PING":
                    trips.redis.append(seen["command"][:100])

    def before_send(request: Any, **_: Any) -> None:
        trips.store.append(f"{request.method} {request.url.split('?', 1)[0]}")

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    ready.wait(5)
    time.sleep(0.2)
    events = objectstore.client().meta.events
    events.register("before-send.s3", before_send)
    try:
        yield trips
    finally:
        events.unregister("before-send.s3", before_send)
        time.sleep(0.2)
        stop.set()
        watched.ping()
        thread.join(5)


def ready_variant_url(project: Any, file_id: str) -> str:
    """The path of a delivery URL (400 px WebP) of ``file_id`` whose variant is ready: a
    variant row marked ready with the file's own object as output, as a worker leaves it."""
    from delivery import signing
    from delivery.services import delivery_key_issue_for
    from files.models import File
    from variants.imaging import Params
    from variants.models import Variant

    file = File.objects.get(id=file_id)
    params = Params(width=400, height=None, fit="cover", format="webp", quality=80)
    Variant.objects.create(
        project=project,
        mode=file.mode,
        file=file,
        version=file.version,
        source_object=file.current_object,
        label=params.label,
        width=400,
        fit="cover",
        format="webp",
        quality=80,
        status=Variant.Status.READY,
        output_object=file.current_object,
        size=file.size,
    )
    issued = delivery_key_issue_for(project=project, mode=file.mode)
    options = signing.Options(width=400)
    return signing.delivery_path(issued.secret, issued.key.id, file_id, options)


_UNDER_CALLGRIND = "PROFILE_GET_UNDER_CALLGRIND"
# The C function of ``operator.call``, which no request calls: collection is on only inside it.
_COLLECTED_FUNCTION = "_operator_call"


def callgrind_control(switch: str) -> None:
    """Turn callgrind's counting in this process on or off."""
    subprocess.run(
        ["callgrind_control", "-i", switch, str(os.getpid())], check=True, capture_output=True
    )


def count_instructions(endpoint: str, requests: int, role: str) -> int:
    """Run this script under callgrind, counting only the timed requests, and print the
    instructions per request."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as workdir:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                "--collect-atstart=no",
                f"--toggle-collect={_COLLECTED_FUNCTION}",
                f"--callgrind-out-file={workdir}/callgrind.out",
                sys.executable,
                "-m",
                "bench.profile_get",
                "--endpoint",
                endpoint,
                "--requests",
                str(requests),
                "--role",
                role,
            ],
            env={**os.environ, _UNDER_CALLGRIND: "1"},
            capture_output=True,
            text=True,
        )
    collected = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or collected is None:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"the run under callgrind failed ({done.returncode})")
    count = int(collected.group(1)) / requests
    print(
        f"{endpoint} in-process ({role} role): {count / 1e6:.3f} M instructions per request "
        f"({requests} requests)"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--sort", choices=["tottime", "cumulative"], default="tottime", help="top functions by"
    )
    parser.add_argument(
        "--endpoint",
        choices=["get", "list", "upload", "resolve"],
        default="get",
        help="GET /v1/files/<id> (default), the list of 20, POST /v1/files/upload, or a "
        "delivery URL of a ready variant",
    )
    parser.add_argument(
        "--role",
        choices=["api", "delivery"],
        default="api",
        help="serve as the API (default) or as a delivery server (resolve only)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count CPU instructions per request under callgrind instead of timing",
    )
    args = parser.parse_args()
    if args.role == "delivery" and args.endpoint != "resolve":
        parser.error("a delivery server answers only --endpoint resolve")
    if args.instructions and not os.environ.get(_UNDER_CALLGRIND):
        return count_instructions(args.endpoint, args.requests, args.role)

    url = bench.bench_database_url()
    bench.ensure_database(url)
    # The limiter stays on (its Redis round trip is measured), with budgets never reached.
    os.environ["SERVICE_RATE_LIMIT_READS_PER_MINUTE"] = str(10**9)
    os.environ["SERVICE_RATE_LIMIT_WRITES_PER_MINUTE"] = str(10**9)
    os.environ["SERVICE_DELIVERY_RATE_PER_MINUTE"] = str(10**9)
    os.environ["SERVICE_ROLE"] = args.role
    bench.setup_django(url)
    import logging

    from accounts.services import api_key_issue
    from files.models import File
    from storage_service.wsgi import application

    # The request log goes to stderr in the server; here to nowhere, but still formatted.
    logging.getLogger().handlers[0].stream = io.StringIO()  # type: ignore[attr-defined]
    project = throughput.fresh_project(url)  # the list: 20 of a folder of 100, as api_throughput
    try:
        key = api_key_issue(project=project, environment="test", name="profile").raw_key
        file_id = (
            File.objects.filter(
                project=project, mode="test", status="uploaded", metadata__isnull=False
            )
            .values_list("id", flat=True)
            .first()
        )
        if args.endpoint == "list":
            one = wsgi_get(application, f"/v1/files?path={throughput.LIST_PATH}&limit=20", key)
        elif args.endpoint == "upload":
            upload = b'{"filename":"p.png","contentType":"image/png","size":1024}'
            one = wsgi_get(application, "/v1/files/upload", key, upload)
        elif args.endpoint == "resolve":
            assert file_id is not None
            one = wsgi_get(application, ready_variant_url(project, file_id), key)
        else:
            one = wsgi_get(application, f"/v1/files/{file_id}", key)
        assert one() in (200, 201, 302)
        for _ in range(200):  # warm up
            one()
        if os.environ.get(_UNDER_CALLGRIND):
            # Instrumenting starts when callgrind hears it, maybe a while later: these
            # requests (not counted) run until then, so the counted loop is all instrumented.
            callgrind_control("on")
            for _ in range(50):
                one()

            def requests() -> None:
                for _ in range(args.requests):
                    one()

            operator.call(requests)
            return 0
        from django.db import connection

        statements: list[str] = []

        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            statements.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record), round_trips() as trips:
            one()
        runs, cpu = [], []
        for _ in range(3):
            started, started_cpu = time.perf_counter(), time.process_time()
            for _ in range(args.requests):
                one()
            runs.append((time.perf_counter() - started) / args.requests * 1000)
            cpu.append((time.process_time() - started_cpu) / args.requests * 1000)
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.requests):
            one()
        profile.disable()
    finally:
        bench.delete_project(url, project.id)

    print(
        f"\n{args.endpoint} in-process: {statistics.median(runs):.3f} ms per request "
        f"(3 runs of {args.requests}: {min(runs):.3f}-{max(runs):.3f} ms), CPU "
        f"{statistics.median(cpu):.3f} ms ({min(cpu):.3f}-{max(cpu):.3f}); "
        f"{len(statements)} SQL statements per request:"
    )
    for statement in statements:
        print(f"  {statement[:150]}")
    print(f"{len(trips.redis)} Redis commands per request:")
    for command in trips.redis:
        print(f"  {command}")
    print(f"{len(trips.store)} store calls per request:")
    for call in trips.store:
        print(f"  {call}")
    print()
    stats = pstats.Stats(profile)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    whole = 0.0
    rows = []
    for label, suffix, name in PARTS:
        total = sum(
            cumulative
            for (filename, _, function), (_, _, _, cumulative, _) in raw.items()
            if filename.endswith(suffix) and function == name
        )
        per = total / args.requests * 1000
        whole = whole or per
        rows.append([label, f"{per:.3f}", f"{per / whole:.0%}"])
    print("Under cProfile, cumulative per request:")
    print(bench.table(["part", "ms", "share"], rows))
    print(f"\nTop {args.top} functions by {args.sort}:")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats(args.sort).print_stats(args.top)
    print("\n".join(out.getvalue().splitlines()[6:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
