"""A browser's upload against the Python client's: the same size to the same store, same run.

100 MiB (``--mib``), 8 MiB parts, 4 in flight, through the API (gunicorn as `make run`
starts it):

- **browser**: headless Chromium (Debian's ``chromium``, driven by playwright-core) on the
  browser-upload example's page (examples/browser-upload, its Node server holding the key):
  the page asks its server to start a multipart session, PUTs the parts to the presigned URLs
  with ``uploadParts`` (``concurrency: 4``), and asks its server to complete. The bytes are
  made in the page before the clock starts, as a file a user picked;
- **Python client**: ``client.files.upload(path)`` from a file on disk, ``max_concurrency=4``.

Rounds alternate; the best round of each counts. Goal: the browser at 0.9 of the Python client
or more. The package's size (minified, gzipped; goal under 15 KB) is printed too. Needs
``make js`` (the built package, Chromium). Everything the run stores is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _common as bench
import requests

MIB = 1024 * 1024
CONCURRENCY = 4
PROJECT_PREFIX = "bench-browser-upload-"
ROOT = bench.ROOT
JS = ROOT / "clients" / "js"


def start_example(api_key: str, base_url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = bench.free_port()
    proc = subprocess.Popen(
        [shutil.which("node") or "node", str(ROOT / "examples" / "browser-upload" / "server.mjs")],
        cwd=ROOT,
        env={
            **os.environ,
            "STORAGE_API_KEY": api_key,
            "STORAGE_BASE_URL": base_url,
            "PORT": str(port),
            "HOST": "127.0.0.1",
        },
        stdout=subprocess.DEVNULL,
    )
    origin = f"http://localhost:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if requests.get(origin, timeout=2).status_code == 200:
                return proc, origin
        except requests.RequestException:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the example's server did not start")


def browser_rounds(origin: str, size: int, rounds: int) -> list[dict[str, Any]]:
    done = subprocess.run(
        ["node", str(ROOT / "bench" / "browser_upload.mjs")],
        cwd=ROOT,
        env={
            **os.environ,
            "EXAMPLE_URL": origin,
            "SIZE": str(size),
            "CONCURRENCY": str(CONCURRENCY),
            "ROUNDS": str(rounds),
            "CHROMIUM": shutil.which("chromium") or "/usr/bin/chromium",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"the browser upload failed ({done.returncode})")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=100, help="size of the upload, MiB")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each upload")
    args = parser.parse_args()
    if not (JS / "dist" / "browser.js").is_file() or shutil.which("chromium") is None:
        raise SystemExit("run `make js` first (the built package and Chromium)")
    size = args.mib * MIB
    size_report = subprocess.run(
        ["node", "scripts/size.mjs"], cwd=JS, capture_output=True, text=True, check=False
    )

    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)
    from botocore.exceptions import ClientError
    from django.conf import settings
    from storage_client import Client

    from accounts.models import Project
    from accounts.services import api_key_issue, project_create
    from files.models import StoredObject
    from storage_service import objectstore

    sys.path.insert(0, str(ROOT / "scripts"))
    from servers import cors_rule

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per part otherwise

    for old in Project.objects.filter(name__startswith=PROJECT_PREFIX).values_list("id", flat=True):
        bench.log(f"removing the leftover project {old}")
        bench.delete_project(url, old)
    project = project_create(name=f"{PROJECT_PREFIX}{int(time.time())}")
    raw_key = api_key_issue(project=project, environment="test", name="bench").raw_key
    s3 = objectstore.client()
    bucket = objectstore.bucket()
    try:
        cors_before = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    except ClientError:
        cors_before = []
    workdir = Path(tempfile.mkdtemp(prefix="bench-browser-upload-"))
    path = workdir / "bench.bin"
    python_runs: list[float] = []
    browser_runs: list[float] = []
    example = None
    try:
        with path.open("wb") as out:
            out.write(os.urandom(size))
        with bench.gunicorn(url) as server:
            server_line = server.describe()
            example, origin = start_example(raw_key, server.base_url)
            s3.put_bucket_cors(
                Bucket=bucket,
                CORSConfiguration={"CORSRules": [*cors_before, cors_rule([origin])]},
            )
            client = Client(api_key=raw_key, base_url=server.base_url, max_concurrency=CONCURRENCY)
            bench.log("warm-up: one upload each way")
            client.files.upload(path, filename="warm.bin")
            browser_rounds(origin, 16 * MIB, 1)
            for round_number in range(args.rounds):
                bench.log(f"round {round_number + 1}: browser uploadParts")
                browser_runs += [r["seconds"] for r in browser_rounds(origin, size, 1)]
                bench.log(f"round {round_number + 1}: Python client.files.upload")
                started = time.perf_counter()
                file = client.files.upload(path, filename="bench.bin")
                python_runs.append(time.perf_counter() - started)
                assert file.status == "uploaded" and file.size == size
            client.close()
    finally:
        if example is not None:
            example.terminate()
            example.wait(timeout=10)
        if cors_before:
            s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": cors_before})
        else:
            s3.delete_bucket_cors(Bucket=bucket)
        path.unlink(missing_ok=True)
        workdir.rmdir()
        keys = list(
            StoredObject.objects.filter(project_id=project.id).values_list("storage_key", flat=True)
        )
        bench.log(f"removing {len(keys)} stored object(s) and the project")
        objectstore.delete(keys)
        bench.delete_project(url, project.id)

    browser_mibs = size / MIB / min(browser_runs)
    python_mibs = size / MIB / min(python_runs)
    ratio = browser_mibs / python_mibs
    print()
    print(f"Browser upload against the Python client ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)")
    print(f"server: {server_line}, DEBUG={settings.DEBUG}")
    print(f"store: {objectstore.storage().endpoint_url or 'AWS S3'}, bucket {bucket}")
    chromium_version = subprocess.run(
        ["chromium", "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(
        f"{args.mib} MiB, 8 MiB parts, {CONCURRENCY} in parallel, through the API; best of "
        f"{args.rounds} rounds; {chromium_version}, headless"
    )
    print()
    print(
        bench.table(
            ["upload", "best s", "MiB/s", "rounds (s)"],
            [
                [
                    "browser: uploadParts (example page)",
                    f"{min(browser_runs):.2f}",
                    f"{browser_mibs:.1f}",
                    " ".join(f"{s:.2f}" for s in browser_runs),
                ],
                [
                    "Python: client.files.upload",
                    f"{min(python_runs):.2f}",
                    f"{python_mibs:.1f}",
                    " ".join(f"{s:.2f}" for s in python_runs),
                ],
            ],
        )
    )
    print(f"ratio browser / Python: {ratio:.2f} ({browser_mibs:.1f} / {python_mibs:.1f} MiB/s)")
    print()
    print("Package size:")
    print("  " + size_report.stdout.strip().replace("\n", "\n  "))
    print()
    print("Goals:")
    print(f"  [{'PASS' if ratio >= 0.9 else 'FAIL'}] browser at least 0.9 of Python: {ratio:.2f}")
    small = size_report.returncode == 0
    print(f"  [{'PASS' if small else 'FAIL'}] package under 15 KB minified and gzipped")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
