"""A browser's upload against the Python client's: the same size to the same store, same run.

100 MiB (``--mib``), 8 MiB parts, 4 in flight, through the API (served as `make run`
starts it), three ways:

- **browser**: headless Chromium (Debian's ``chromium``, driven by playwright-core) on the
  browser-upload example's page (examples/browser-upload, its Node server holding the key):
  the page asks its server to start a multipart session, PUTs the parts to the presigned URLs
  with ``uploadParts`` (``concurrency: 4``), and asks its server to complete. The bytes are
  the file on disk picked in the page's file input (``--in-memory``: made in the page);
- **token**: the same page and File, with an upload token and no server in the loop:
  ``uploadWithToken`` (``concurrency: 4``) starts, sends and completes straight against the
  API (cross-origin, the token's CORS). The token is minted for each upload by the bench
  (``POST /v1/upload-tokens`` with the key, as the application's server would, before the
  user picks the file), outside the clock;
- **Python client**: ``client.files.upload(path)`` from the file on disk, ``max_concurrency=4``.

All do the same work: the session's parts (the service picks 8 MiB for 100 MiB, so 13 parts,
the last 4 MiB), 4 in flight, no checksum computed (the store's ETags are taken as they come).
One browser serves every round (the File is picked once, like the Python client's file on
disk), so the rounds interleave: each round is one upload each way, in an order that cycles
through the six orders of the three (so a drift in the machine's load hits all alike). A
round's ratios divide throughputs of that round; the median over the rounds counts. Goals:
the browser at least 0.9 of the Python client; the token upload as fast as the browser through
the application's server (at least 0.95 of it: the two differ only in who calls start and
complete). For each upload the CPU seconds of each side are printed too (Chromium's processes
by kind, the Python process, the store's ``weed``), which a loaded machine distorts far less
than wall-clock time, with the cores the whole machine kept busy during each upload (2.0 on
this machine: the upload waited on CPU) and the machine's load average with each round.

``--store-core N`` runs the store (``weed``, every thread) on core N alone and everything else
the bench starts (the API, Chromium, the Python client) on the other cores: a store on machines
of its own, as in any deployment, where a browser never takes CPU from it.

The package's size (minified, gzipped; goal under 15 KB) is printed too. Needs ``make js``
(the built package, Chromium). Everything the run stores is removed at the end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import requests

from bench import _common as bench
from bench._browser_cpu import Side, measured, pin_store, set_affinity, store_pid, tree_cpu

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


class Browser:
    """bench/browser_upload.mjs: one Chromium on the example's page, an upload per request."""

    def __init__(self, origin: str, size: int, picked: Path | None) -> None:
        self.proc = subprocess.Popen(
            [shutil.which("node") or "node", str(ROOT / "bench" / "browser_upload.mjs")],
            cwd=ROOT,
            env={
                **os.environ,
                "EXAMPLE_URL": origin,
                "SIZE": str(size),
                "CONCURRENCY": str(CONCURRENCY),
                "CHROMIUM": shutil.which("chromium") or "/usr/bin/chromium",
                **({"FILE": str(picked)} if picked else {}),
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.stdin: IO[str] = self.proc.stdin  # type: ignore[assignment]
        self.stdout: IO[str] = self.proc.stdout  # type: ignore[assignment]
        if self.stdout.readline().strip() != "ready":
            raise SystemExit(f"the browser did not start ({self.proc.wait()})")

    def upload(self) -> tuple[dict[str, Any], Counter[str]]:
        """One upload: the page's figures, and the CPU seconds it took, by process kind."""
        before = tree_cpu(self.proc.pid)
        self.stdin.write("upload\n")
        self.stdin.flush()
        line = self.stdout.readline()
        if not line.startswith("{"):
            raise SystemExit(f"the browser upload failed ({self.proc.wait()})")
        after = tree_cpu(self.proc.pid)
        after.subtract(before)
        return json.loads(line), after

    def token_upload(self, token: str, base_url: str) -> tuple[dict[str, Any], Counter[str]]:
        """One upload with an upload token, straight to the API: the page's figures, and the
        CPU seconds it took, by process kind."""
        before = tree_cpu(self.proc.pid)
        self.stdin.write(f"token {token} {base_url}\n")
        self.stdin.flush()
        line = self.stdout.readline()
        if not line.startswith("{"):
            raise SystemExit(f"the browser's token upload failed ({self.proc.wait()})")
        after = tree_cpu(self.proc.pid)
        after.subtract(before)
        return json.loads(line), after

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@dataclass
class Pair:
    """One round: an upload each way, in ``order``."""

    load: str
    order: tuple[str, ...]
    browser: dict[str, Any]
    browser_cpu: Counter[str]
    browser_side: Side
    token: dict[str, Any]
    token_cpu: Counter[str]
    token_side: Side
    python_seconds: float
    python_cpu: float
    python_side: Side

    @property
    def ratio(self) -> float:
        """The browser's throughput over the Python client's."""
        return self.python_seconds / float(self.browser["seconds"])

    @property
    def token_ratio(self) -> float:
        """The token upload's throughput over the browser's through the example's server."""
        return float(self.browser["seconds"]) / float(self.token["seconds"])

    @property
    def token_python_ratio(self) -> float:
        return self.python_seconds / float(self.token["seconds"])


# The six orders of the three uploads, cycled over the rounds.
ORDERS = list(itertools.permutations(("browser", "token", "python")))


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=100, help="size of the upload, MiB")
    parser.add_argument(
        "--rounds", type=int, default=6, help="rounds of uploads, one each way per round"
    )
    parser.add_argument(
        "--in-memory",
        action="store_true",
        help="the page uploads a File made in its memory, not the file on disk picked",
    )
    parser.add_argument(
        "--store-core",
        type=int,
        help="run the store on this core alone and both clients on the others, as a store on "
        "machines of its own would run (unpinned, Chromium's CPU comes out of the store's)",
    )
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
    from scripts.servers import cors_rule
    from storage_service import objectstore

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per part otherwise
    store = store_pid(objectstore.storage().endpoint_url)
    if args.store_core is not None:
        if store is None:
            raise SystemExit("--store-core: no process on this machine listens on the store's port")
        store_cores = pin_store(store, args.store_core)

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
    pairs: list[Pair] = []
    example = None
    browser = None
    try:
        with path.open("wb") as out:
            out.write(os.urandom(size))
        with bench.api_server(url) as server:
            server_line = server.describe()
            example, origin = start_example(raw_key, server.base_url)
            s3.put_bucket_cors(
                Bucket=bucket,
                CORSConfiguration={"CORSRules": [*cors_before, cors_rule([origin])]},
            )
            client = Client(api_key=raw_key, base_url=server.base_url, max_concurrency=CONCURRENCY)
            browser = Browser(origin, size, None if args.in_memory else path)

            def mint() -> str:
                answer = requests.post(
                    f"{server.base_url}/v1/upload-tokens",
                    json={"maxFileSizeBytes": size, "maxFiles": 1, "allowedOrigins": [origin]},
                    headers={"Authorization": f"Bearer {raw_key}"},
                    timeout=30,
                )
                answer.raise_for_status()
                return str(answer.json()["data"]["token"])

            def token_upload() -> tuple[dict[str, Any], Counter[str]]:
                assert browser is not None
                return browser.token_upload(token, server.base_url)

            def python_upload() -> tuple[float, float]:
                cpu, started = time.process_time(), time.perf_counter()
                file = client.files.upload(path, filename="bench.bin")
                seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
                assert file.status == "uploaded" and file.size == size
                return seconds, cpu

            bench.log("warm-up: one upload each way")
            python_upload()
            browser.upload()
            token = mint()
            token_upload()
            for number in range(args.rounds):
                load = load_average()
                order = ORDERS[number % len(ORDERS)]
                bench.log(f"round {number + 1}: {', '.join(order)}")
                done: dict[str, tuple[Any, Side]] = {}
                for side in order:
                    if side == "browser":
                        done[side] = measured(browser.upload, store)
                    elif side == "token":
                        token = mint()  # the application's server's part, before the clock
                        done[side] = measured(token_upload, store)
                    else:
                        done[side] = measured(python_upload, store)
                (seen, seen_cpu), browser_side = done["browser"]
                (by_token, token_cpu), token_side = done["token"]
                (seconds, cpu), python_side = done["python"]
                pairs.append(
                    Pair(
                        load,
                        order,
                        seen,
                        seen_cpu,
                        browser_side,
                        by_token,
                        token_cpu,
                        token_side,
                        seconds,
                        cpu,
                        python_side,
                    )
                )
            client.close()
    finally:
        if args.store_core is not None and store is not None:
            set_affinity(store, store_cores)
        if browser is not None:
            browser.close()
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

    ratio = statistics.median(pair.ratio for pair in pairs)
    token_ratio = statistics.median(pair.token_ratio for pair in pairs)
    token_python = statistics.median(pair.token_python_ratio for pair in pairs)
    mib = size / MIB
    print()
    print(f"Browser upload against the Python client ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)")
    print(f"server: {server_line}, DEBUG={settings.DEBUG}")
    print(f"store: {objectstore.storage().endpoint_url or 'AWS S3'}, bucket {bucket}")
    chromium_version = subprocess.run(
        ["chromium", "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    part_mib = pairs[0].browser["partSize"] / MIB
    print(
        f"{args.mib} MiB, {part_mib:g} MiB parts, {CONCURRENCY} in parallel, through the API; "
        f"{args.rounds} rounds, interleaved; {chromium_version}, headless"
    )
    print(f"load average before / after: {pairs[0].load} / {load_average()}")
    if args.store_core is not None:
        print(f"the store on core {args.store_core} alone; the clients and the API on the others")
    print()
    kinds = ["browser", "renderer", "network", "other", "node driver"]
    print(
        bench.table(
            [
                "round",
                "load 1/5/15 min",
                "order",
                "browser s (MiB/s)",
                "start/parts/complete ms",
                "token s (MiB/s)",
                "Python s (MiB/s)",
                "browser/Python",
                "token/browser",
                "CPU s browser (" + "/".join(kinds) + ")",
                "CPU s token",
                "CPU s Python",
                "CPU s store (browser/token/Python)",
                "cores busy (browser/token/Python)",
            ],
            [
                [
                    str(number),
                    pair.load,
                    "-".join(side[0] for side in pair.order),
                    f"{pair.browser['seconds']:.2f} ({mib / pair.browser['seconds']:.1f})",
                    f"{pair.browser['startMs']}/{pair.browser['partsMs']}/"
                    f"{pair.browser['completeMs']}",
                    f"{pair.token['seconds']:.2f} ({mib / pair.token['seconds']:.1f})",
                    f"{pair.python_seconds:.2f} ({mib / pair.python_seconds:.1f})",
                    f"{pair.ratio:.2f}",
                    f"{pair.token_ratio:.2f}",
                    f"{sum(pair.browser_cpu.values()):.2f} ("
                    + "/".join(f"{pair.browser_cpu[kind]:.2f}" for kind in kinds)
                    + ")",
                    f"{sum(pair.token_cpu.values()):.2f}",
                    f"{pair.python_cpu:.2f}",
                    f"{pair.browser_side.store_cpu:.2f}/{pair.token_side.store_cpu:.2f}/"
                    f"{pair.python_side.store_cpu:.2f}",
                    f"{pair.browser_side.cores():.2f}/{pair.token_side.cores():.2f}/"
                    f"{pair.python_side.cores():.2f}",
                ]
                for number, pair in enumerate(pairs, 1)
            ],
        )
    )
    each = ", ".join(f"{pair.ratio:.2f}" for pair in pairs)
    print(f"median ratio browser / Python: {ratio:.2f} (rounds: {each})")
    each = ", ".join(f"{pair.token_ratio:.2f}" for pair in pairs)
    print(f"median ratio token / browser through its server: {token_ratio:.2f} (rounds: {each})")
    print(f"median ratio token / Python: {token_python:.2f}")
    print("order: b = browser through the example's server, t = token, p = Python client")
    print()
    print("Package size:")
    print("  " + size_report.stdout.strip().replace("\n", "\n  "))
    print()
    print("Goals:")
    print(f"  [{'PASS' if ratio >= 0.9 else 'FAIL'}] browser at least 0.9 of Python: {ratio:.2f}")
    verdict = "PASS" if token_ratio >= 0.95 else "FAIL"
    print(
        f"  [{verdict}] token upload as fast as the browser through its server "
        f"(at least 0.95): {token_ratio:.2f}"
    )
    small = size_report.returncode == 0
    print(f"  [{'PASS' if small else 'FAIL'}] package under 15 KB minified and gzipped")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
