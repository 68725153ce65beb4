"""Webhook delivery: deliveries per second, and latency from an event's commit to its arrival.

One project with 20 endpoints on a local receiver (all events), then events recorded through
``events.services.event_record`` exactly as the API records them (one transaction each; the
fan-out and the after-commit message included), in two phases:

- paced: events at a steady rate (``--rate`` per second, default 30, so 600 deliveries per
  second are offered, above the 500 goal), the latency a receiver sees in normal operation;
- burst: events as fast as one process can commit them, the most the worker sends per
  second (every delivery queues behind the burst, so its latency is the backlog's).

The worker is the webhook worker exactly as ``make run`` starts it
(``scripts/devservices.py:webhook_worker_command``), on the dev settings and the bench
database, on its own queue name so a running ``make run`` never takes the bench's messages.
The receiver is a separate process (one asyncio loop, HTTP/1.1 keep-alive) that records each
request's arrival time; latency is arrival minus the time the event's transaction committed
(the first after-commit callback). Both run on this machine and share its cores.

    .venv/bin/python -m scripts.devservices exec -- .venv/bin/python -m bench.webhooks

``--statements N`` measures what each delivery costs the database, which holds on a loaded
machine where deliveries per second do not: N events recorded and delivered one at a time in
this process (``webhooks.delivery.deliver``: the task's claim, sending and outcomes, the
outcomes written by the calling thread), counting the statements each phase sends
(``connection.execute_wrapper``), the transactions committed and the rows written
(``pg_stat_database`` and ``pg_stat_user_tables`` of the bench database), and the CPU of
this process and of its PostgreSQL backend.

``--sender`` measures the HTTP side alone, in this process: the CPU one attempt of
``webhooks.sender.post`` costs (keep-alive connections, the watchdog, reading the answer), from 8
threads against the same receiver, with no database, worker or broker in the way.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from bench._common import (
    ROOT,
    bench_database_url,
    cpu_count,
    delete_project,
    ensure_database,
    free_port,
    log,
    percentile,
    server_environment,
    setup_django,
    table,
)
from bench._webhook_receiver import arrivals, receiver_process, serve_receiver

ENDPOINTS = 20
# Threads recording events, like API processes: one alone cannot commit fast enough.
PRODUCERS = 4
QUEUE = "bench-webhooks"
NODE = "bench-webhooks@%h"


# --- CPU accounting -----------------------------------------------------------------------


def _ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])


def _postgres_ticks() -> int:
    total = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() in {"postgres", "postmaster"}:
                    total += _ticks(int(entry.name))
            except OSError:
                continue
    return total


def cpu_snapshot(pids: dict[str, int]) -> dict[str, float]:
    hz = os.sysconf("SC_CLK_TCK")
    snapshot = {name: _ticks(pid) / hz for name, pid in pids.items()}
    snapshot["bench"] = sum(os.times()[:2])
    snapshot["postgres"] = _postgres_ticks() / hz
    return snapshot


# --- The run ------------------------------------------------------------------------------


def start_worker(url: str) -> subprocess.Popen[bytes]:
    from scripts import devservices

    command = [str(part) for part in devservices.webhook_worker_command(NODE)]
    env = server_environment(
        url, SERVICE_WEBHOOK_QUEUE=QUEUE, **devservices.webhook_worker_environment()
    )
    log(f"worker: {' '.join(command[1:])}")
    # Its start-up banner goes nowhere; warnings and errors (stderr) still show.
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)


def wait_for_worker(proc: subprocess.Popen[bytes]) -> None:
    from storage_service.celery import app

    deadline = time.monotonic() + 60
    node = NODE.replace("%h", __import__("socket").gethostname())
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the webhook worker exited at start-up")
        if app.control.ping(destination=[node], timeout=0.5):
            return
    raise SystemExit("the webhook worker did not answer within 60 s")


def record_events(project: Any, count: int, rate: float | None) -> dict[str, float]:
    """Record ``count`` events, each in its own transaction, from ``PRODUCERS`` threads (as
    API workers would), paced at ``rate`` per second or as fast as they go; return their
    commit times by event id."""
    from django.db import connection, transaction

    from accounts.tenancy import Tenant
    from events.services import event_record

    committed: dict[str, float] = {}
    counter = itertools.count()
    started = time.monotonic()

    def produce() -> None:
        try:
            while (n := next(counter)) < count:
                if rate is not None:
                    pause = started + n / rate - time.monotonic()
                    if pause > 0:
                        time.sleep(pause)
                with transaction.atomic():
                    holder: dict[str, str] = {}
                    # Registered before event_record's own callback, so it runs first: the
                    # moment of the commit.
                    transaction.on_commit(
                        lambda h=holder: committed.__setitem__(h["id"], time.time())
                    )
                    event = event_record(
                        tenant=Tenant(project=project, mode="test"),
                        type="file.uploaded",
                        data={"fileId": f"file_bench{n:022d}", "size": 1024 + n},
                    )
                    holder["id"] = event.id
        finally:
            connection.close()

    threads = [threading.Thread(target=produce) for _ in range(PRODUCERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return committed


def measure(
    name: str, project: Any, count: int, rate: float | None, port: int, pids: dict[str, int]
) -> tuple[list[str], dict[str, float]]:
    expected = count * ENDPOINTS
    before = cpu_snapshot(pids)
    committed = record_events(project, count, rate)
    offered_until = time.time()
    got: list[tuple[str, str, float]] = []
    deadline = time.monotonic() + 300
    while len(got) < expected and time.monotonic() < deadline:
        time.sleep(0.5)
        got.extend(arrivals(port))
    after = cpu_snapshot(pids)
    latencies = [(at - committed[event_id]) * 1000 for _, event_id, at in got if event_id]
    first_commit = min(committed.values())
    last_arrival = max(at for _, _, at in got) if got else offered_until
    seconds = last_arrival - first_commit
    cpu = {key: (after[key] - before[key]) / seconds for key in after}
    row = [
        name,
        f"{count:,}",
        f"{count / (offered_until - first_commit):.0f}",
        f"{len(got):,}/{expected:,}",
        f"{seconds:.1f}",
        f"{len(got) / seconds:.0f}",
        f"{percentile(latencies, 50):.1f}",
        f"{percentile(latencies, 99):.1f}",
        f"{max(latencies):.1f}" if latencies else "-",
    ]
    return row, {"rate": len(got) / seconds, "p50": percentile(latencies, 50), **cpu}


def measure_sender(count: int) -> None:
    """CPU per attempt of webhooks.sender.post, in this process, against the receiver."""
    import ipaddress
    from concurrent.futures import ThreadPoolExecutor

    setup_django(bench_database_url())
    from webhooks import sender
    from webhooks.network import parse_url

    port = free_port()
    receiver = receiver_process(port)
    try:
        target = parse_url(f"http://127.0.0.1:{port}/hook")
        addresses = [ipaddress.ip_address("127.0.0.1")]
        body = json.dumps({"id": "evt_bench", "type": "file.uploaded", "data": {"n": 1}}).encode()
        headers = {"Host": target.host_header, "Content-Type": "application/json"}

        def attempt(_: int) -> None:
            result = sender.post(target, addresses, "/hook", body, headers, timeout=10.0)
            assert result.ok, result

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(attempt, range(200)))  # connections opened, code paths loaded
            before, started = os.times(), time.monotonic()
            list(pool.map(attempt, range(count)))
            after, seconds = os.times(), time.monotonic() - started
    finally:
        receiver.terminate()
        receiver.wait(timeout=15)
    user = (after.user - before.user) / count * 1e6
    system = (after.system - before.system) / count * 1e6
    print(
        f"webhooks.sender.post, {count:,} attempts from 8 threads: {user + system:.0f} us CPU "
        f"each (user {user:.0f}, system {system:.0f}), {count / seconds:,.0f} per second"
    )


_TABLE_COUNTS = """
SELECT coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0), coalesce(sum(n_tup_hot_upd), 0)
FROM pg_stat_user_tables WHERE relname IN ('webhooks_delivery', 'webhooks_endpoint')
"""


def database_counts(url: str) -> tuple[int, int, int, int]:
    """Transactions committed in the bench database, and rows inserted, updated and updated
    in place (HOT) in the delivery and endpoint tables: the server's cumulative statistics,
    which a backend reports up to a second after its work, so this waits that second."""
    time.sleep(1.5)
    with psycopg.connect(url, autocommit=True) as conn:
        (commits,) = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()  # type: ignore[misc]
        inserted, updated, hot = conn.execute(_TABLE_COUNTS).fetchone()  # type: ignore[misc]
    return int(commits), int(inserted), int(updated), int(hot)


def measure_statements(count: int) -> None:
    """What one delivery costs the database, delivered in this process (see the docstring)."""
    url = bench_database_url()
    ensure_database(url)
    os.environ["SERVICE_WEBHOOK_QUEUE"] = QUEUE
    setup_django(url)
    from django.db import connection, transaction

    from accounts.services import project_create
    from accounts.tenancy import Tenant
    from events.services import event_record
    from storage_service.celery import app
    from webhooks.delivery import deliver
    from webhooks.models import Delivery
    from webhooks.services import endpoint_create

    port = free_port()
    receiver = receiver_process(port)
    project = project_create(name="bench-webhooks", organization_name="bench-webhooks")
    tenant = Tenant(project=project, mode="test")
    statements = {"record": 0, "deliver": 0}
    phase = {"now": ""}

    def counted(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if phase["now"]:
            statements[phase["now"]] += 1
        return execute(sql, params, many, context)

    def backend_seconds(pid: int) -> float:
        return _ticks(pid) / os.sysconf("SC_CLK_TCK")

    try:
        for n in range(ENDPOINTS):
            endpoint_create(tenant=tenant, url=f"http://127.0.0.1:{port}/hook/{n}", events=None)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (backend,) = cursor.fetchone()

        def one_event(n: int) -> int:
            phase["now"] = "record"
            with transaction.atomic():
                event = event_record(tenant=tenant, type="file.uploaded", data={"n": n})
            phase["now"] = ""
            ids = list(Delivery.objects.filter(event_id=event.id).values_list("id", flat=True))
            phase["now"] = "deliver"
            retries = deliver(ids)
            phase["now"] = ""
            assert not retries, retries
            return len(ids)

        with connection.execute_wrapper(counted):
            for n in range(20):  # warm-up: connections opened, code paths loaded
                one_event(n)
            statements.update(record=0, deliver=0)
            before_db = database_counts(url)
            before_cpu, before_backend = sum(os.times()[:2]), backend_seconds(backend)
            delivered = sum(one_event(n) for n in range(count))
            cpu = sum(os.times()[:2]) - before_cpu
            backend_cpu = backend_seconds(backend) - before_backend
            after_db = database_counts(url)
    finally:
        receiver.terminate()
        receiver.wait(timeout=15)
        with app.connection_for_write() as broker:
            channel: Any = broker.default_channel
            channel.queue_purge(QUEUE)  # the after-commit messages, which no worker took
        with psycopg.connect(url) as conn:
            conn.execute(
                "DELETE FROM webhooks_delivery WHERE endpoint_id IN"
                " (SELECT id FROM webhooks_endpoint WHERE project_id = %s)",
                (project.id,),
            )
        delete_project(url, project.id)

    commits, inserted, updated, hot = (a - b for a, b in zip(after_db, before_db, strict=True))
    per = float(delivered)
    print(
        f"\nWebhook delivery, {count:,} events to {ENDPOINTS} endpoints ({delivered:,} "
        "deliveries), one at a time in this process; per delivery:"
    )
    print(
        f"  statements: {statements['record'] / per:.3f} recording the event "
        f"(its insert and its deliveries'), {statements['deliver'] / per:.3f} delivering "
        "(claim, outcomes), besides BEGIN/COMMIT"
    )
    print(f"  transactions committed: {commits / per:.3f} (the bench database, every kind)")
    print(
        f"  rows of deliveries and endpoints: {inserted / per:.2f} inserted, {updated / per:.2f} "
        f"updated ({hot / per:.2f} of those in place, HOT)"
    )
    print(
        f"  CPU: this process {cpu / per * 1000:.3f} ms (recording, sending, receiving's "
        f"client side), its PostgreSQL backend {backend_cpu / per * 1000:.3f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=2000, help="events per phase")
    parser.add_argument("--rate", type=float, default=30.0, help="paced phase: events per second")
    parser.add_argument(
        "--sender", type=int, metavar="N", help="only measure N attempts of the HTTP sender"
    )
    parser.add_argument(
        "--statements",
        type=int,
        metavar="N",
        help="only count what N events' deliveries cost the database, in this process",
    )
    parser.add_argument("--serve-receiver", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_receiver is not None:
        asyncio.run(serve_receiver(args.serve_receiver))
        return 0
    if args.sender is not None:
        measure_sender(args.sender)
        return 0
    if args.statements is not None:
        measure_statements(args.statements)
        return 0

    url = bench_database_url()
    ensure_database(url)
    os.environ["SERVICE_WEBHOOK_QUEUE"] = QUEUE
    setup_django(url)
    from django.conf import settings

    from accounts.services import project_create
    from accounts.tenancy import Tenant
    from storage_service.celery import app
    from webhooks.services import endpoint_create

    with app.connection_for_write() as connection:
        channel: Any = connection.default_channel
        channel.queue_purge(QUEUE)
    port = free_port()
    receiver = receiver_process(port)
    worker = start_worker(url)
    project = project_create(name="bench-webhooks", organization_name="bench-webhooks")
    try:
        wait_for_worker(worker)
        for n in range(ENDPOINTS):
            endpoint_create(
                tenant=Tenant(project=project, mode="test"),
                url=f"http://127.0.0.1:{port}/hook/{n}",
                events=None,
            )
        pids = {"worker": worker.pid, "receiver": receiver.pid}
        # Warm-up: connections opened, code paths loaded.
        measure("warm-up", project, 20, None, port, pids)
        paced, paced_figures = measure("paced", project, args.events, args.rate, port, pids)
        burst, burst_figures = measure("burst", project, args.events, None, port, pids)
    finally:
        for proc in (worker, receiver):
            proc.terminate()
        for proc in (worker, receiver):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        # Deliveries hang off endpoints and events, not the project: they go first.
        with psycopg.connect(url) as conn:
            conn.execute(
                "DELETE FROM webhooks_delivery WHERE endpoint_id IN"
                " (SELECT id FROM webhooks_endpoint WHERE project_id = %s)",
                (project.id,),
            )
        delete_project(url, project.id)

    print(
        f"\nWebhook delivery: {ENDPOINTS} endpoints (all events) on one local receiver, "
        f"{args.events:,} events per phase"
    )
    print(
        f"worker: the webhook worker as `make run` starts it (celery --pool threads, "
        f"{os.environ.get('WEBHOOK_WORKER_THREADS', '8')} task threads, "
        f"{settings.SERVICE_WEBHOOK_CONCURRENCY} sending threads), "
        f"storage_service.settings.dev, on a {cpu_count()}-core machine"
    )
    print("latency: from the event's commit to the request's arrival at the receiver\n")
    print(
        table(
            [
                "phase",
                "events",
                "events/s",
                "arrived",
                "seconds",
                "deliveries/s",
                "p50 ms",
                "p99 ms",
                "max ms",
            ],
            [paced, burst],
        )
    )
    print()
    for name, figures in (("paced", paced_figures), ("burst", burst_figures)):
        print(
            f"CPU cores used, {name} (of {cpu_count()}): worker {figures['worker']:.2f}, "
            f"receiver {figures['receiver']:.2f}, bench (events) {figures['bench']:.2f}, "
            f"postgres {figures['postgres']:.2f} (every postgres process on the machine)"
        )
    best = max(paced_figures["rate"], burst_figures["rate"])
    print("\nGoals:")
    print(f"  [{'PASS' if best >= 500 else 'FAIL'}] at least 500 deliveries per second: {best:.0f}")
    p50 = paced_figures["p50"]
    print(f"  [{'PASS' if p50 < 100 else 'FAIL'}] p50 under 100 ms (paced): {p50:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
