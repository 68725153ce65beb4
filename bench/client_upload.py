"""The Python client's upload against boto3's, the same bytes to the same store, same run.

1 GiB (``--gib``) from a file on disk:

- ``client.files.upload(path)``: the storage client, through the API (served as `make
  run` starts it): start a multipart session, PUT its 128 parts of 8 MiB to their presigned
  URLs, 4 at a time, complete (the service assembles and verifies);
- ``boto3 upload_file``: boto3's managed transfer straight to the same SeaweedFS bucket with
  the store's own credentials (8 MiB parts, 4 threads), no API in between.

Each upload runs in a child process of its own, so each peak RSS (``VmHWM``) is that
upload's alone; the baseline is the child's RSS after its imports, before the upload. The
client also uploads a quarter of the size: the same peak shows that its memory does not grow
with the file (it streams each part in 1 MiB chunks; about concurrency x chunk in flight).
Rounds alternate; the best round of each counts. Goal: the client at 0.9 of boto3 or more.
Everything the run stores is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
GIB = 1024 * MIB
PART = 8 * MIB
CONCURRENCY = 4
PROJECT_PREFIX = "bench-client-upload-"


def status_mib(field: str) -> float:
    """A memory figure of this process from /proc/self/status, in MiB: VmRSS (resident now)
    or VmHWM (the peak). Not ru_maxrss: Linux carries that across exec, so a child would
    report its parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(args: argparse.Namespace) -> int:
    """One upload in this process; prints {seconds, baselineMiB, peakMiB} as JSON."""
    if args.child == "client":
        from storage_client import Client

        client = Client(api_key=args.api_key, base_url=args.base_url, max_concurrency=CONCURRENCY)
        client.me()  # connect once, as boto3's client below resolves nothing until used
        baseline = status_mib("VmRSS")
        marks: dict[str, float] = {}

        def progress(done: int, total: int) -> None:
            # When the first and the last byte went out: the rest is the API's part (start
            # the session; complete, which assembles and verifies the object).
            now = time.perf_counter()
            if done and "first" not in marks:
                marks["first"] = now
            if done == total:
                marks["last"] = now

        started = time.perf_counter()
        file = client.files.upload(args.file, filename="bench.bin", progress=progress)
        ended = time.perf_counter()
        seconds = ended - started
        assert file.status == "uploaded" and file.size == os.path.getsize(args.file)
        api = (marks["first"] - started) + (ended - marks["last"])
    else:
        import boto3
        from boto3.s3.transfer import TransferConfig
        from botocore.config import Config

        s3 = boto3.client(
            "s3",
            endpoint_url=args.endpoint,
            aws_access_key_id=args.access_key,
            aws_secret_access_key=args.secret_key,
            region_name=args.region,
            config=Config(s3={"addressing_style": "path"}),
        )
        config = TransferConfig(
            multipart_threshold=PART,
            multipart_chunksize=PART,
            max_concurrency=CONCURRENCY,
            use_threads=True,
        )
        s3.head_bucket(Bucket=args.bucket)
        baseline = status_mib("VmRSS")
        started = time.perf_counter()
        s3.upload_file(args.file, args.bucket, args.key, Config=config)
        seconds = time.perf_counter() - started
        api = 0.0
    peak = status_mib("VmHWM")
    print(
        json.dumps(
            {"seconds": seconds, "apiSeconds": api, "baselineMiB": baseline, "peakMiB": peak}
        )
    )
    return 0


def run_child(extra: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.client_upload", *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"the child upload failed ({done.returncode})")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def write_file(path: Path, size: int) -> None:
    block = os.urandom(16 * MIB)
    with open(path, "wb") as out:
        for offset in range(0, size, len(block)):
            out.write(block[: min(len(block), size - offset)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=1.0, help="size of the upload, GiB")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each upload")
    for name in ("child", "file", "api-key", "base-url", "endpoint", "access-key"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    for name in ("secret-key", "region", "bucket", "key"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    # Only the parent needs the bench helpers (and their imports): the children's memory is
    # the upload's.
    from bench import _common as bench

    total = int(args.gib * GIB)
    small = total // 4
    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)
    from django.conf import settings

    from accounts.models import Project
    from accounts.services import api_key_issue, project_create
    from files.models import StoredObject
    from storage_service import objectstore

    for old in Project.objects.filter(name__startswith=PROJECT_PREFIX).values_list("id", flat=True):
        bench.log(f"removing the leftover project {old}")
        bench.delete_project(url, old)
    project = project_create(name=f"{PROJECT_PREFIX}{int(time.time())}")
    raw_key = api_key_issue(project=project, environment="test", name="bench").raw_key
    keys = objectstore.storage().credentials.get_frozen_credentials()
    store = [
        "--endpoint",
        str(objectstore.storage().endpoint_url),
        "--access-key",
        keys.access_key,
        "--secret-key",
        keys.secret_key,
        "--region",
        str(objectstore.storage().region_name),
        "--bucket",
        objectstore.bucket(),
    ]
    workdir = Path(tempfile.mkdtemp(prefix="bench-client-upload-"))
    big, little = workdir / "big.bin", workdir / "little.bin"
    direct_keys: list[str] = []
    client_runs: list[dict[str, Any]] = []
    direct_runs: list[dict[str, Any]] = []
    try:
        bench.log(f"writing {total / GIB:g} GiB and {small / GIB:g} GiB of random bytes")
        write_file(big, total)
        write_file(little, small)
        with bench.api_server(url) as server:
            server_line = server.describe()
            client_args = ["--child", "client", "--api-key", raw_key, "--base-url", server.base_url]
            bench.log("warm-up: a small upload each way")
            run_child([*client_args, "--file", str(little)])
            for round_number in range(args.rounds):
                bench.log(f"round {round_number + 1}: client.files.upload")
                client_runs.append(run_child([*client_args, "--file", str(big)]))
                key = f"{project.id}/bench-direct-{round_number}"
                direct_keys.append(key)
                bench.log(f"round {round_number + 1}: boto3 upload_file")
                direct_runs.append(
                    run_child(["--child", "boto3", "--file", str(big), "--key", key, *store])
                )
            bench.log(f"client.files.upload of {small / GIB:g} GiB (memory with the size)")
            little_run = run_child([*client_args, "--file", str(little)])
    finally:
        for path in (big, little):
            path.unlink(missing_ok=True)
        workdir.rmdir()
        keys = list(
            StoredObject.objects.filter(project_id=project.id).values_list("storage_key", flat=True)
        )
        bench.log(f"removing {len(keys) + len(direct_keys)} stored object(s) and the project")
        objectstore.delete(keys + direct_keys)
        bench.delete_project(url, project.id)

    best_client = min(client_runs, key=lambda r: r["seconds"])
    best_direct = min(direct_runs, key=lambda r: r["seconds"])
    client_mibs = total / MIB / best_client["seconds"]
    direct_mibs = total / MIB / best_direct["seconds"]
    ratio = client_mibs / direct_mibs
    client_peak = max(r["peakMiB"] for r in client_runs)
    direct_peak = max(r["peakMiB"] for r in direct_runs)

    def row(label: str, runs: list[dict[str, Any]], size: int) -> list[str]:
        best = min(runs, key=lambda r: r["seconds"])
        return [
            label,
            f"{best['seconds']:.2f}",
            f"{size / MIB / best['seconds']:.1f}",
            f"{max(r['peakMiB'] for r in runs):.1f}",
            f"{max(r['peakMiB'] - r['baselineMiB'] for r in runs):.1f}",
            " ".join(f"{r['seconds']:.2f}" for r in runs),
        ]

    print()
    print(f"Client upload against boto3 ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)")
    print(f"server: {server_line}, DEBUG={settings.DEBUG}")
    print(f"store: {objectstore.storage().endpoint_url or 'AWS S3'}, bucket {objectstore.bucket()}")
    print(
        f"{total / GIB:g} GiB from a file on disk, 8 MiB parts, {CONCURRENCY} in parallel; "
        f"best of {args.rounds} rounds; each upload in its own process"
    )
    print()
    print(
        bench.table(
            ["upload", "seconds", "MiB/s", "peak RSS MiB", "over baseline", "rounds (s)"],
            [
                row(f"client.files.upload, {total / GIB:g} GiB", client_runs, total),
                row(f"boto3 upload_file, {total / GIB:g} GiB", direct_runs, total),
                row(f"client.files.upload, {small / GIB:g} GiB", [little_run], small),
            ],
        )
    )
    print(f"ratio client / boto3: {ratio:.2f} ({client_mibs:.1f} / {direct_mibs:.1f} MiB/s)")
    print(
        f"of the client's best round, {best_client['apiSeconds']:.2f} s before its first byte "
        "and after its last (start the session; complete: assemble and verify)"
    )
    growth = client_peak - little_run["peakMiB"]
    print()
    print("Goals:")
    print(f"  [{'PASS' if ratio >= 0.9 else 'FAIL'}] throughput at least 0.9 of boto3: {ratio:.2f}")
    bounded = abs(growth) < 16
    print(
        f"  [{'PASS' if bounded else 'FAIL'}] client memory bounded: peak {client_peak:.1f} MiB "
        f"at {total / GIB:g} GiB, {little_run['peakMiB']:.1f} MiB at {small / GIB:g} GiB "
        f"(boto3: {direct_peak:.1f} MiB)"
    )
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
