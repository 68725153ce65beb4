"""A soak: mixed traffic from 16 concurrent clients for 10 minutes against the whole service as
`make run` starts it (API, worker, beat), with webhooks to a local receiver and thumbnails.

    .venv/bin/python -m bench.soak [--clients 16] [--duration 600]

Prints requests per second, p50/p99 per endpoint, the error count (goal: zero 5xx), the events
recorded beside the deliveries made and received (goal: every event delivered to every
subscribed endpoint, byte-for-byte as recorded), and the resident memory of the API and worker
processes at the start and at the end (goal: no growth beyond 10%).

Each client is its own project and key (16 customers, not one), so the per-key rate limits
apply as they would in production; a 429 is counted but is not an error. The service runs in
the bench database and on its own Redis database (so a developer's `make run` worker never
takes its tasks), started by `scripts/devservices.py run` exactly as `make run` starts it.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections import Counter
from typing import Any

import requests

from bench import _common as bench
from bench._soak_clients import Client, Stats
from bench._soak_service import Receiver, Service, soak_database_url

SETTLE_TIMEOUT = 180.0
WARMUP_SECONDS = 60.0


# --- Setup and report -----------------------------------------------------------------------


def make_projects(url: str, clients: int) -> list[tuple[str, str]]:
    """(project id, raw key) per client, in the bench database."""
    bench.setup_django(url)
    from accounts.services import api_key_issue, project_create

    made = []
    for index in range(clients):
        project = project_create(name=f"soak-{index}", organization_name="soak")
        made.append((project.id, api_key_issue(project=project, environment="test").raw_key))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument(
        "--duration", type=float, default=float(os.environ.get("SOAK_SECONDS", 600))
    )
    parser.add_argument("--webhooks-per-project", type=int, default=2)
    args = parser.parse_args()

    url = soak_database_url()
    bench.create_database(url, drop_first=bench.database_exists(url))
    bench.migrate(url)
    projects = make_projects(url, args.clients)
    receiver = Receiver()
    service = Service(url, bench.free_port())
    try:
        service.wait_ready()
        bench.log(
            f"service ready at {service.base_url}; {args.clients} clients for {args.duration:.0f} s"
        )
        endpoints = register_webhooks(
            service.base_url, projects, receiver, args.webhooks_per_project
        )
        memory_idle = service.memory()
        stats = Stats()
        stop = threading.Event()
        clients = [
            Client(i, service.base_url, key, stats, stop) for i, (_, key) in enumerate(projects)
        ]
        threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        next_report = started + 60
        warm_at = started + min(WARMUP_SECONDS, args.duration / 2)
        memory_start: dict[str, float] = {}
        while time.monotonic() - started < args.duration:
            time.sleep(1)
            if not memory_start and time.monotonic() >= warm_at:
                # Workers import code and fill caches lazily on their first requests; growth
                # is measured from here, after the warm-up, and the idle figure is printed too.
                memory_start = service.memory()
            if time.monotonic() >= next_report:
                done = sum(len(v) for v in stats.latencies.values())
                elapsed_now = time.monotonic() - started
                bench.log(f"{elapsed_now:.0f} s: {done} requests, problems {dict(stats.problems)}")
                next_report += 60
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
        elapsed = time.monotonic() - started
        memory_end = service.memory()
        delivery = settle_and_compare(url, endpoints, receiver)
        report(stats, elapsed, memory_idle, memory_start, memory_end, delivery, args)
    finally:
        service.stop()


def register_webhooks(
    base_url: str, projects: list[tuple[str, str]], receiver: Receiver, per_project: int
) -> dict[str, str]:
    """Endpoint id -> receiver path, every event type subscribed."""
    endpoints = {}
    for project_id, key in projects:
        for n in range(per_project):
            path = f"{project_id}-{n}"
            response = requests.post(
                f"{base_url}/v1/webhooks",
                json={"url": receiver.url(path)},
                headers={"Authorization": f"Bearer {key}"},
                timeout=30,
            )
            response.raise_for_status()
            endpoints[response.json()["data"]["webhook"]["id"]] = "/" + path
    return endpoints


def settle_and_compare(url: str, endpoints: dict[str, str], receiver: Receiver) -> dict[str, Any]:
    """Wait for the deliveries to finish, then compare events, deliveries and arrivals."""
    from events.models import Event
    from variants.models import Variant
    from webhooks.models import Delivery

    # Thumbnails first: finishing one records file.processed, which is delivered too.
    unfinished = [Variant.Status.PENDING, Variant.Status.PROCESSING]
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline and Variant.objects.filter(status__in=unfinished).exists():
        time.sleep(2)
    while time.monotonic() < deadline:
        pending = Delivery.objects.filter(status=Delivery.Status.PENDING).count()
        if pending == 0:
            break
        time.sleep(2)
    variants = Counter(Variant.objects.values_list("status", flat=True))
    events = list(Event.objects.all())
    expected = {(endpoints[e], ev.id) for ev in events for e in endpoints if _subscribed(ev, e)}
    arrived = set(receiver.received)
    mismatched = 0
    envelopes = {ev.id: ev for ev in events}
    for (_, event_id), body in receiver.received.items():
        event = envelopes.get(event_id)
        if event is None or json.loads(body) != _envelope(event):
            mismatched += 1
    return {
        "events": len(events),
        "expected": len(expected),
        "delivered": Delivery.objects.filter(status=Delivery.Status.DELIVERED).count(),
        "failed": Delivery.objects.filter(status=Delivery.Status.FAILED).count(),
        "pending": Delivery.objects.filter(status=Delivery.Status.PENDING).count(),
        "arrived": len(arrived & expected),
        "missing": len(expected - arrived),
        "unexpected": len(arrived - expected),
        "duplicates": receiver.duplicates,
        "mismatched": mismatched,
        "variants": dict(variants),
    }


def _subscribed(event: Any, endpoint_id: str) -> bool:
    # Every soak endpoint subscribes to every type; an event belongs to one project.
    return bool(event.data.get("projectId")) and endpoint_id in _project_endpoints(
        event.data["projectId"]
    )


_endpoint_cache: dict[str, set[str]] = {}


def _project_endpoints(project_id: str) -> set[str]:
    if project_id not in _endpoint_cache:
        from webhooks.models import Endpoint

        _endpoint_cache[project_id] = set(
            Endpoint.objects.filter(project_id=project_id).values_list("id", flat=True)
        )
    return _endpoint_cache[project_id]


def _envelope(event: Any) -> dict[str, Any]:
    from events.envelope import event_envelope

    return json.loads(json.dumps(event_envelope(event)))


def report(
    stats: Stats,
    elapsed: float,
    memory_idle: dict[str, float],
    memory_start: dict[str, float],
    memory_end: dict[str, float],
    delivery: dict[str, Any],
    args: argparse.Namespace,
) -> None:
    total = sum(len(v) for v in stats.latencies.values())
    server_errors = sum(n for (_, status), n in stats.statuses.items() if status >= 500)
    limited = sum(n for (_, status), n in stats.statuses.items() if status == 429)
    rate = total / elapsed
    print(f"\nsoak: {args.clients} clients, {elapsed:.0f} s, {total} requests, {rate:.1f} req/s")
    rows = []
    for label in sorted(stats.latencies):
        samples = stats.latencies[label]
        rows.append(
            [
                label,
                str(len(samples)),
                f"{len(samples) / elapsed:.1f}",
                f"{bench.percentile(samples, 50):.1f}",
                f"{bench.percentile(samples, 99):.1f}",
            ]
        )
    print(bench.table(["endpoint", "requests", "req/s", "p50 ms", "p99 ms"], rows))
    print(f"\n5xx responses: {server_errors} (goal 0); 429 (rate limited, retried): {limited}")
    for kind, count in sorted(stats.problems.items()):
        print(f"  problem {kind}: {count}  e.g. {stats.examples[kind]}")
    print(
        "\nwebhooks: {events} events; {expected} (event, endpoint) pairs subscribed; "
        "{delivered} deliveries DELIVERED, {failed} FAILED, {pending} still PENDING; "
        "{arrived} arrived at the receiver, {missing} missing, {unexpected} unexpected, "
        "{duplicates} duplicate arrivals, {mismatched} bodies differing from the recorded "
        "event".format(**delivery)
    )
    print(f"thumbnails (of every PNG upload and replacement), by status: {delivery['variants']}")
    print(
        f"\nresident memory (MiB)    idle  after {min(WARMUP_SECONDS, args.duration / 2):.0f} s"
        "      end"
        "   growth from warm (goal <= 10%)"
    )
    for role in sorted(set(memory_start) | set(memory_end)):
        idle = memory_idle.get(role, 0.0)
        start, end = memory_start.get(role, 0.0), memory_end.get(role, 0.0)
        growth = (end - start) / start * 100 if start else float("nan")
        print(f"  {role:<20} {idle:8.1f} {start:8.1f} {end:8.1f}   {growth:+.1f}%")


if __name__ == "__main__":
    main()
