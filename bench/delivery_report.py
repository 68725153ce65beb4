"""bench.delivery's report: what was measured in each round, the ratios and the goals."""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass
from pathlib import Path

from bench import _common as bench
from bench._supabase import Peer
from bench.api_throughput import Round

RESOLVE = "GET /d/… (302 to the variant)"
GET = "GET /v1/files/<id>"
PEER_SIGNED = "peer: GET /object/sign/<bucket>/<path>?token=…"
# As deployed: the same two requests through nginx with deploy/nginx/storage-delivery.conf.
RESOLVE_FRONTED = "nginx: GET /d/… (its cached 302)"
GET_FRONTED = "nginx: GET /v1/files/<id> (passed to the API)"
# (measured, reference, ratio): resolutions against our GET and the peer's signed URL.
GOALS = [(RESOLVE, GET, 2.0), (RESOLVE, PEER_SIGNED, 1.5)]
END_TO_END_GOAL = 1.0


@dataclass
class Fetched:
    """One end-to-end pass: the client's figures, and the CPU seconds each server spent."""

    seconds: float
    count: int
    bytes: int
    failures: int
    client_cpu: float
    server_cpu: float  # ours: the server resolving; the peer: its Node process
    store_cpu: float
    postgres_cpu: float

    @property
    def per_second(self) -> float:
        return self.count / self.seconds


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


LOAD_COLUMNS = [
    "request",
    "req/s",
    "/d/ over this",
    "p50 ms",
    "p99 ms",
    "server CPU ms/req",
    "postgres CPU ms/req",
    "errors",
    "other cores",
]


def load_rows(rounds: list[Round], labels: list[str], over: str, peer: Peer) -> list[list[str]]:
    """A row of LOAD_COLUMNS for each of ``labels``, its ratio that of ``over`` to it."""
    rows = []
    for label in labels:
        measures = [r.measures[label] for r in rounds]
        rows.append(
            [
                label,
                spread([m.rps for m in measures], ",.0f"),
                spread([r.ratio(over, label) for r in rounds], ".2f") if label != over else "",
                f"{statistics.median(m.p50_ms for m in measures):.1f}",
                f"{statistics.median(m.p99_ms for m in measures):.1f}",
                f"{statistics.median(m.server_ms for m in measures):.2f}"
                if label != PEER_SIGNED or peer.pid is not None
                else "-",
                f"{statistics.median(m.postgres_ms for m in measures):.2f}",
                str(sum(m.errors + m.timeouts for m in measures)),
                f"{max(m.other_cores for m in measures):.2f}",
            ]
        )
    return rows


def report(
    rounds: list[Round],
    passes: list[tuple[Fetched, Fetched]],
    args: argparse.Namespace,
    peer: Peer,
    api_line: str,
    debug: bool,
    image_size: int,
    thumb_size: int,
) -> None:
    print()
    print(f"API:  {api_line}, DEBUG={debug}")
    print(
        f"peer: Supabase Storage at {peer.url}, bucket {peer.bucket} (private), "
        + (f"process {peer.pid}" if peer.pid is not None else "its process not found here")
    )
    print(f"load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(
        f"\n1. Resolution of the {image_size:,}-byte image: wrk -t2 -c16, {args.duration:g} s "
        f"after {args.warmup:g} s of warm-up, {len(rounds)} rounds; median (min-max)"
    )
    print(bench.table(LOAD_COLUMNS, load_rows(rounds, [RESOLVE, GET, PEER_SIGNED], RESOLVE, peer)))
    print(
        "'server CPU': our server's processes (the delivery server's on the /d/ row, the "
        "API's on GET's), or on the peer's row its Node process; 'other"
        " cores': the most, over the rounds, used by wrk and the rest of the machine."
    )
    if RESOLVE_FRONTED in rounds[0].measures:
        print(
            "\nAs deployed: both through nginx with deploy/nginx/storage-delivery.conf (one "
            "worker; the /d/ URL's 302 from its cache, GET passed to the API); 'server CPU' is "
            "nginx's"
        )
        fronted = load_rows(rounds, [RESOLVE_FRONTED, GET_FRONTED], RESOLVE_FRONTED, peer)
        print(bench.table(LOAD_COLUMNS, fronted))

    print(
        f"\n2. {args.thumbnails} thumbnails of {thumb_size:,} bytes end to end, Node's fetch "
        f"following redirects, {args.concurrency} in flight; one pass each way per round"
    )
    rows = []
    for number, (ours, theirs) in enumerate(passes, 1):
        rows.append(
            [
                str(number),
                f"{ours.seconds:.2f} ({ours.per_second:,.0f}/s)",
                f"{theirs.seconds:.2f} ({theirs.per_second:,.0f}/s)",
                f"{theirs.seconds / ours.seconds:.2f}",
                f"{ours.client_cpu:.2f}/{theirs.client_cpu:.2f}",
                f"{ours.server_cpu:.2f}/{theirs.server_cpu:.2f}",
                f"{ours.store_cpu:.2f}/{theirs.store_cpu:.2f}",
                f"{ours.postgres_cpu:.2f}/{theirs.postgres_cpu:.2f}",
            ]
        )
    print(
        bench.table(
            [
                "round",
                "ours s (thumbnails/s)",
                "peer s (thumbnails/s)",
                "ours/peer",
                "CPU s client",
                "CPU s server",
                "CPU s store",
                "CPU s postgres",
            ],
            rows,
        )
    )
    print(
        "CPU columns: ours/peer; 'server' is our server resolving the URLs (the delivery "
        "server, unless --delivery api), or the peer's Node process."
    )

    print("\nGoals (on the median ratio, straight to our servers, not through nginx):")
    for label, reference, goal in GOALS:
        ratio = statistics.median(r.ratio(label, reference) for r in rounds)
        verdict = "PASS" if ratio >= goal else "FAIL"
        print(f"  [{verdict}] {label} at least {goal:.1f}x {reference}: {ratio:.2f}")
    ratio = statistics.median(theirs.seconds / ours.seconds for ours, theirs in passes)
    verdict = "PASS" if ratio >= END_TO_END_GOAL else "FAIL"
    print(
        f"  [{verdict}] {args.thumbnails} thumbnails end to end at least {END_TO_END_GOAL:.1f}x "
        f"the peer's signed URLs: {ratio:.2f}"
    )
