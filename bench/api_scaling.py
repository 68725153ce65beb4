"""How the API grows with its processes (docs/scaling.md): requests per second and p50/p99
latency at concurrency 16, for the upload, get-one and list endpoints, each beside GET
/bench/bare (a bare Django view in the same server), with one or two API processes.
(bench/api_throughput.py compares the hot paths with references outside the service.)

    .venv/bin/python -m bench.api_scaling [--concurrency 16] [--duration 10] [--warmup 2]
                                          [--servers 1]

``--servers 2`` starts two API server processes (as `make cluster` does, each with the workers
`make run` gives one) and spreads the virtual clients over both, for docs/scaling.md.

The server is the API server as `make run` starts it (same workers and threads), with
SERVICE_BENCH_ROUTES=true. The load comes from one asyncio loop in this process holding one
connection per virtual client, speaking plain HTTP/1.1 over asyncio streams: a far lighter
client than requests or httpx, because it shares the machine's cores with the server it
measures. The project is fresh for every run (1,000 seeded files, in the bench database) and
deleted afterwards, with the files the upload run created.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench import _common as bench

PROJECT_PREFIX = "bench-api-throughput-"
SEED_FILES = 1_000
REQUEST_TIMEOUT = 30.0
GOALS = {"GET /v1/files/<id>": 0.50, "POST /v1/files/upload": 0.25}


@dataclass
class Endpoint:
    label: str
    method: str
    path: str
    expect: int
    body: Callable[[int, int], bytes] | None = None  # (client, sequence) -> JSON body


@dataclass
class Result:
    endpoint: Endpoint
    window: float
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    client_cpu: float = 0.0  # cores used over the window
    cpu: bench.CpuTimes = field(default_factory=lambda: bench.CpuTimes(0.0, 0.0, 0.0))

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.window

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


# --- A minimal HTTP/1.1 client ----------------------------------------------------------------


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Read one response; (status, whether the connection may be reused)."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("connection closed before a response")
    version, status, _ = status_line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            await reader.readexactly(size + 2)  # the chunk and its CRLF
            if size == 0:
                break
    else:
        await reader.read()  # delimited by the end of the connection
        return int(status), False
    keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    return int(status), keep


async def client(
    number: int,
    port: int,
    endpoint: Endpoint,
    auth: str,
    result: Result,
    measure_from: float,
    stop_at: float,
) -> None:
    """One virtual client: requests back to back, reusing its connection when the server
    allows it."""
    head = (
        f"{endpoint.method} {endpoint.path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {auth}\r\nAccept: application/json\r\n"
    )
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    sequence = 0
    while time.perf_counter() < stop_at:
        body = endpoint.body(number, sequence) if endpoint.body is not None else b""
        sequence += 1
        request = head.encode()
        if endpoint.body is not None:
            request += b"Content-Type: application/json\r\n"
        request += f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        started = time.perf_counter()
        try:
            if writer is None or reader is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            # A server that stops answering fails the request instead of hanging the bench.
            status, keep = await asyncio.wait_for(read_response(reader), REQUEST_TIMEOUT)
        except (OSError, ValueError, asyncio.IncompleteReadError) as exc:  # TimeoutError too
            if started >= measure_from:
                result.error(type(exc).__name__)
            if writer is not None:
                writer.close()
            reader = writer = None
            continue
        finished = time.perf_counter()
        if not keep:
            writer.close()
            reader = writer = None
        if started < measure_from or finished > stop_at:
            continue  # warm-up, or finished after the window closed
        if status != endpoint.expect:
            result.error(f"HTTP {status}")
        else:
            result.latencies.append((finished - started) * 1000)
    if writer is not None:
        writer.close()


def run_load(
    servers: list[bench.Server],
    endpoint: Endpoint,
    auth: str,
    concurrency: int,
    warmup: float,
    duration: float,
) -> Result:
    result = Result(endpoint, duration)

    async def load() -> None:
        now = time.perf_counter()
        measure_from = now + warmup
        stop_at = measure_from + duration
        clients = [
            client(n, servers[n % len(servers)].port, endpoint, auth, result, measure_from, stop_at)
            for n in range(concurrency)
        ]
        tasks = [asyncio.ensure_future(c) for c in clients]
        await asyncio.sleep(warmup)
        client_cpu, cpu = time.process_time(), servers_cpu(servers)
        await asyncio.sleep(max(0.0, stop_at - time.perf_counter()))
        used = servers_cpu(servers) - cpu
        result.client_cpu = (time.process_time() - client_cpu) / duration
        result.cpu = bench.CpuTimes(
            used.server / duration, used.postgres / duration, used.machine / duration
        )
        await asyncio.gather(*tasks)

    asyncio.run(load())
    return result


def servers_cpu(servers: list[bench.Server]) -> bench.CpuTimes:
    """CPU so far: every API server summed; PostgreSQL and the machine once."""
    times = [server.cpu() for server in servers]
    server = sum(t.server for t in times)
    last = times[-1]
    return bench.CpuTimes(server, last.postgres, last.machine, last.postgres_by_pid)


# --- Setup ----------------------------------------------------------------------------------


def fresh_project(url: str) -> Any:
    """A new project with SEED_FILES files, after removing those of earlier (crashed) runs."""
    project = bench.fresh_project(url, prefix=PROJECT_PREFIX, rows=SEED_FILES)
    return project


def upload_body(client_number: int, sequence: int) -> bytes:
    body = {
        "filename": f"bench-{client_number}-{sequence}.png",
        "contentType": "image/png",
        "size": 1024,
    }
    return json.dumps(body).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first")
    parser.add_argument("--servers", type=int, default=1, help="API server processes (ports)")
    args = parser.parse_args()

    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)
    from django.conf import settings

    from accounts.services import api_key_issue
    from accounts.tenancy import Tenant
    from files.models import File

    project = fresh_project(url)
    try:
        raw_key = api_key_issue(project=project, environment="test", name="bench").raw_key
        file_id = (
            File.objects.for_tenant(Tenant(project=project, mode="test"))
            .visible()
            .values_list("id", flat=True)[0]
        )
        bare = Endpoint("GET /bench/bare", "GET", "/bench/bare", 200)
        endpoints = [
            bare,
            Endpoint("GET /v1/files/<id>", "GET", f"/v1/files/{file_id}", 200),
            Endpoint("GET /v1/files (limit 20)", "GET", "/v1/files", 200),
            Endpoint("POST /v1/files/upload", "POST", "/v1/files/upload", 201, upload_body),
            Endpoint("GET /bench/bare (again)", "GET", "/bench/bare", 200),
        ]
        results = []
        with contextlib.ExitStack() as stack:
            servers = [
                stack.enter_context(bench.api_server(url, bench_routes=True))
                for _ in range(args.servers)
            ]
            for endpoint in endpoints:
                bench.log(f"{endpoint.label}: {args.warmup:g} s warm-up, {args.duration:g} s")
                results.append(
                    run_load(
                        servers, endpoint, raw_key, args.concurrency, args.warmup, args.duration
                    )
                )
            server_line = f"{len(servers)} x " + servers[0].describe()
    finally:
        bench.delete_project(url, project.id)

    report(results, server_line, bool(settings.DEBUG), args)
    failed = [r for r in results if not r.latencies]
    return 1 if failed else 0


def other_cores(result: Result) -> float:
    cpu = result.cpu
    return max(0.0, cpu.machine - result.client_cpu - cpu.server - cpu.postgres)


def report(results: list[Result], server_line: str, debug: bool, args: argparse.Namespace) -> None:
    bare = [r for r in results if r.endpoint.path == "/bench/bare"]
    bare_rps = sum(r.rps for r in bare) / len(bare)
    print()
    print(f"Throughput at concurrency {args.concurrency}, {args.duration:g} s per endpoint")
    print(f"server: {server_line}, DEBUG={debug}")
    print(
        f"client: one asyncio loop, {args.concurrency} connections, in this process. It shares "
        f"the machine's {bench.cpu_count()} cores with the server and PostgreSQL, so the "
        "figures are lower bounds for a server with the cores to itself."
    )
    print()
    rows = []
    for r in results:
        errors = ", ".join(f"{k} x{v}" for k, v in r.errors.items()) or "-"
        rows.append(
            [
                r.endpoint.label,
                f"{len(r.latencies):,}",
                f"{r.rps:.0f}",
                f"{bench.percentile(r.latencies, 50):.1f}",
                f"{bench.percentile(r.latencies, 99):.1f}",
                f"{r.rps / bare_rps:.0%}",
                f"{r.client_cpu:.2f}",
                f"{r.cpu.server:.2f}",
                f"{r.cpu.postgres:.2f}",
                f"{other_cores(r):.2f}",
                errors,
            ]
        )
    headers = ["endpoint", "requests", "req/s", "p50 ms", "p99 ms", "vs bare"]
    headers += ["client", "server", "postgres", "other", "errors"]
    print(bench.table(headers, rows))
    print(
        "\nclient/server/postgres/other: CPU cores each used during the measured window "
        f"(of {bench.cpu_count()}); 'other' is the rest of the machine's busy time."
    )
    noisy = [r.endpoint.label for r in results if other_cores(r) > bench.NOISY_CORES]
    if noisy:
        print(
            f"WARNING: other processes used over {bench.NOISY_CORES} cores during "
            f"{', '.join(noisy)}; those figures are noisy. Rerun on a quiet machine."
        )
    print(
        f"'vs bare' divides by the mean of the two bare runs ({bare_rps:.0f} req/s); the "
        "second bare run shows any drift over the run."
    )
    print("\nGoals:")
    for label, share in GOALS.items():
        result = next(r for r in results if r.endpoint.label == label)
        ratio = result.rps / bare_rps
        verdict = "PASS" if ratio >= share else "FAIL"
        print(f"  [{verdict}] {label} at least {share:.0%} of bare: {ratio:.0%}")


if __name__ == "__main__":
    sys.exit(main())
