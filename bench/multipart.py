"""Multipart uploads: initiating 10,000 parts, and 1 GiB pushed through the part URLs.

1. The time to initiate an upload of 10,000 parts (80,000 MiB in 8 MiB parts), which presigns
   all 10,000 part URLs, over HTTP against the API as `make run` serves it: p50 and p95 of
   ``--runs`` requests (each session is aborted afterwards, untimed). Beside it, in-process,
   10,000 URLs from the service's presigner and from botocore's.
   Goal: p50 under 500 ms.
2. 1 GiB uploaded the way a client of the service does it (initiate, PUT the 128 parts of
   8 MiB to their presigned URLs with 4 parallel PUTs, complete) beside the same bytes
   uploaded straight to the store with boto3's own multipart transfer (8 MiB parts, 4
   threads). The rounds alternate; the best round of each counts. Prints MB/s and the ratio.
   Goal: 0.9 or more.

The bytes are one random 8 MiB buffer sent 128 times: no disk, no per-part generation.
Everything the run stores is removed at the end.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import requests

from bench import _common as bench

MIB = 1024 * 1024
PART = 8 * MIB
GIB = 1024 * MIB
PROJECT_PREFIX = "bench-multipart-"


class RepeatingReader(io.RawIOBase):
    """``total`` bytes made of one buffer repeated: boto3 reads it like a file."""

    def __init__(self, buffer: bytes, total: int) -> None:
        self.buffer = memoryview(buffer)
        self.total = total
        self.position = 0

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        left = self.total - self.position
        if left <= 0:
            return 0
        offset = self.position % len(self.buffer)
        n = min(len(target), left, len(self.buffer) - offset)
        target[:n] = self.buffer[offset : offset + n]
        self.position += n
        return n


def fresh_project(url: str) -> Any:
    from accounts.models import Project
    from accounts.services import project_create

    for old in Project.objects.filter(name__startswith=PROJECT_PREFIX).values_list("id", flat=True):
        bench.log(f"removing the leftover project {old}")
        bench.delete_project(url, old)
    return project_create(name=f"{PROJECT_PREFIX}{int(time.time())}")


def presign_figures(count: int) -> tuple[float, float]:
    """Milliseconds for ``count`` part URLs: the service's presigner (best of 5), botocore's
    (once: it takes seconds)."""
    from storage_service import objectstore

    # Both build the boto3 client (and ours the URL prefix) once per process: not timed.
    objectstore.part_signer(key="warm", upload_id="warm", expires_in=60).url(1, 1)
    ours = math.inf
    for _ in range(5):  # best of 5: it is short enough for a busy machine to distort once
        started = time.perf_counter()
        signer = objectstore.part_signer(key="bench/key", upload_id="bench-upload", expires_in=900)
        for number in range(1, count + 1):
            signer.url(number, PART)
        ours = min(ours, (time.perf_counter() - started) * 1000)
    client = objectstore.client()
    started = time.perf_counter()
    for number in range(1, count + 1):
        client.generate_presigned_url(
            "upload_part",
            Params={
                "Bucket": objectstore.bucket(),
                "Key": "bench/key",
                "UploadId": "bench-upload",
                "PartNumber": number,
                "ContentLength": PART,
            },
            ExpiresIn=900,
        )
    botocore_ms = (time.perf_counter() - started) * 1000
    return ours, botocore_ms


def initiate_figures(
    session: requests.Session, base: str, runs: int, warmup: int
) -> tuple[list[float], int, list[str]]:
    """Initiate ``runs`` uploads of 10,000 parts; returns ms per request, the body's bytes,
    and the sessions' ids (aborted right after each timing)."""
    body = {"filename": "big.bin", "contentType": "application/octet-stream", "size": 10_000 * PART}
    timings: list[float] = []
    size = 0
    ids: list[str] = []
    # The first requests are not counted: each API worker builds its boto3 clients on its
    # first use of the store.
    for _ in range(runs + warmup):
        started = time.perf_counter()
        response = session.post(f"{base}/v1/uploads/multipart", json=body, timeout=60)
        elapsed = (time.perf_counter() - started) * 1000
        response.raise_for_status()
        upload = response.json()["data"]["upload"]
        assert len(upload["parts"]) == 10_000, len(upload["parts"])
        session.delete(f"{base}/v1/uploads/multipart/{upload['id']}", timeout=60).raise_for_status()
        ids.append(upload["id"])
        timings.append(elapsed)
        size = len(response.content)
    return timings[warmup:], size, ids


def through_service(
    session: requests.Session, base: str, buffer: bytes, total: int
) -> tuple[float, float, float]:
    """Seconds for a client to initiate, PUT every part (4 at once), and complete; and
    the seconds of the initiate and complete calls among them."""
    local = threading.local()

    def put(part: dict[str, Any]) -> dict[str, Any]:
        http = getattr(local, "http", None)
        if http is None:
            http = local.http = requests.Session()
        length = min(PART, total - (part["partNumber"] - 1) * PART)
        # bytes, not a memoryview: requests would iterate a memoryview as a stream.
        body = buffer if length == len(buffer) else buffer[:length]
        response = http.put(part["url"], data=body, timeout=300)
        response.raise_for_status()
        return {"partNumber": part["partNumber"], "etag": response.headers["ETag"]}

    started = time.perf_counter()
    body = {"filename": "gib.bin", "contentType": "application/octet-stream", "size": total}
    response = session.post(f"{base}/v1/uploads/multipart", json=body, timeout=60)
    response.raise_for_status()
    upload = response.json()["data"]["upload"]
    assert upload["partSize"] == PART
    initiated = time.perf_counter()
    with ThreadPoolExecutor(max_workers=4) as pool:
        parts = list(pool.map(put, upload["parts"]))
    uploaded = time.perf_counter()
    done = session.post(
        f"{base}/v1/uploads/multipart/{upload['id']}/complete", json={"parts": parts}, timeout=300
    )
    done.raise_for_status()
    finished = time.perf_counter()
    assert done.json()["size"] == total
    return finished - started, initiated - started, finished - uploaded


def straight_to_store(buffer: bytes, total: int, key: str) -> float:
    """Seconds for boto3's managed multipart upload of the same bytes (8 MiB, 4 threads)."""
    from boto3.s3.transfer import TransferConfig

    from storage_service import objectstore

    config = TransferConfig(
        multipart_threshold=PART, multipart_chunksize=PART, max_concurrency=4, use_threads=True
    )
    started = time.perf_counter()
    objectstore.client().upload_fileobj(
        RepeatingReader(buffer, total), objectstore.bucket(), key, Config=config
    )
    return time.perf_counter() - started


def stored_keys(project_id: str) -> list[str]:
    from files.models import StoredObject

    return list(
        StoredObject.objects.filter(project_id=project_id).values_list("storage_key", flat=True)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed 10,000-part initiates")
    parser.add_argument("--rounds", type=int, default=2, help="1 GiB rounds of each kind")
    parser.add_argument("--gib", type=float, default=1.0, help="size of the big upload, GiB")
    args = parser.parse_args()
    total = int(args.gib * GIB)

    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)
    from django.conf import settings

    from accounts.services import api_key_issue
    from storage_service import objectstore

    ours_ms, botocore_ms = presign_figures(10_000)
    buffer = os.urandom(PART)
    project = fresh_project(url)
    direct_keys: list[str] = []
    try:
        raw_key = api_key_issue(project=project, environment="test", name="bench").raw_key
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {raw_key}"
        with bench.api_server(url) as server:
            server_line = server.describe()
            bench.log(f"initiating {args.runs} uploads of 10,000 parts (after a warm-up)")
            timings, body_bytes, _ = initiate_figures(
                http, server.base_url, args.runs, warmup=2 * server.workers
            )
            service_runs: list[tuple[float, float, float]] = []
            direct_runs: list[float] = []
            for round_number in range(args.rounds):
                bench.log(f"round {round_number + 1}: {total / GIB:g} GiB through the service")
                service_runs.append(through_service(http, server.base_url, buffer, total))
                key = f"{project.id}/bench-direct-{round_number}"
                direct_keys.append(key)
                bench.log(f"round {round_number + 1}: {total / GIB:g} GiB straight with boto3")
                direct_runs.append(straight_to_store(buffer, total, key))
    finally:
        keys = stored_keys(project.id) + direct_keys
        bench.log(f"removing {len(keys)} stored object(s) and the bench project")
        objectstore.delete(keys)
        bench.delete_project(url, project.id)

    p50, p95 = bench.percentile(timings, 50), bench.percentile(timings, 95)
    best = min(service_runs)
    service_mbps = total / best[0] / 1e6
    direct_mbps = total / min(direct_runs) / 1e6
    ratio = service_mbps / direct_mbps
    print()
    print(f"Multipart uploads ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)")
    print(f"server: {server_line}, DEBUG={settings.DEBUG}")
    print(f"store: {objectstore.storage().endpoint_url or 'AWS S3'}, bucket {objectstore.bucket()}")
    print()
    print("1. Initiate an upload of 10,000 parts (80,000 MiB), every part URL presigned")
    print(
        bench.table(
            ["measure", "p50 ms", "p95 ms", "runs"],
            [
                [
                    "POST /v1/uploads/multipart over HTTP",
                    f"{p50:.1f}",
                    f"{p95:.1f}",
                    str(len(timings)),
                ],
                ["  (response body)", f"{body_bytes / 1e6:.1f} MB", "", ""],
                ["10,000 part URLs, service presigner", f"{ours_ms:.1f}", "", "best of 5"],
                ["10,000 part URLs, botocore", f"{botocore_ms:.1f}", "", "1"],
            ],
        )
    )
    print()
    print(f"2. {total / GIB:g} GiB in 8 MiB parts, 4 parallel PUTs; best of {args.rounds} rounds")
    print(
        bench.table(
            ["path", "seconds", "MB/s", "rounds (s)"],
            [
                [
                    "service: initiate + presigned PUTs + complete",
                    f"{best[0]:.2f}",
                    f"{service_mbps:.1f}",
                    " ".join(f"{s[0]:.2f}" for s in service_runs),
                ],
                ["  of which initiate (128 parts)", f"{best[1]:.3f}", "", ""],
                ["  of which complete (list, assemble, verify)", f"{best[2]:.3f}", "", ""],
                [
                    "boto3 upload_fileobj straight to the store",
                    f"{min(direct_runs):.2f}",
                    f"{direct_mbps:.1f}",
                    " ".join(f"{s:.2f}" for s in direct_runs),
                ],
            ],
        )
    )
    print(f"ratio service / boto3: {ratio:.2f}")
    print()
    print("Goals:")
    verdict = "PASS" if p50 < 500 else "FAIL"
    print(f"  [{verdict}] initiate 10,000 parts p50 under 500 ms: {p50:.1f} ms")
    print(
        f"  [{'PASS' if ratio >= 0.9 else 'FAIL'}] 1 GiB throughput ratio at least 0.9: {ratio:.2f}"
    )
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
