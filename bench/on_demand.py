"""Images on demand: the first request for a new size of a 12-megapixel JPEG, and what a burst
of such requests from one project does to another project's requests.

    .venv/bin/python -m scripts.devservices exec -- .venv/bin/python -m bench.on_demand

The API is served as ``make run`` serves it (bench/_common.py) and the transforms run on the
transform worker as ``make run`` starts it (``scripts/devservices.py``,
``CELERY_CONCURRENCY`` processes, else one per core), on a queue of the bench's own so a
running ``make run`` never takes its messages. The source is bench/variants.py's photo-like
4000x3000 JPEG (quality 90), uploaded through the API as several files of project A (a file
version holds at most SERVICE_VARIANT_MAX_PER_VERSION variants).

1. **Warm-up**: each file's thumbnail, and a few unmeasured sizes, so every worker process
   has imported its libraries and opened its connections.
2. **First requests, one at a time**: ``GET`` of a delivery URL (signed offline with A's
   delivery key, as an application's server signs it) of width 400, ``format=webp`` and a
   height of its own (``--sizes`` of them, each new), following ``307`` as a browser does,
   timed until the ``302``. Where the time went comes from the variant's row (created,
   claimed by a worker, finished) and the 302's arrival; the work inside the worker
   (store GET, decode, resize, encode, store PUT) is timed again in this process on the
   same bytes, with the peers on the same input in the same run: pyvips
   (``thumbnail_buffer`` + ``webpsave_buffer``) and Pillow alone (full decode, LANCZOS,
   WebP).
3. **Burst**: ``--burst`` first requests for distinct sizes from A, all sent at once
   (``--burst-concurrency`` in flight), while project B ``GET``s ``/v1/files/<id>`` one
   request after another with ``--b-pause`` between them. Printed: B's p50/p99 before and
   during the burst, and how A's requests ended (302, 503 ``VARIANT_NOT_READY``, other).

Goals: the first request's p50 under 400 ms; B's p99 under 100 ms during the burst.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench._common import (
    ROOT,
    api_server,
    bench_database_url,
    delete_project,
    ensure_database,
    log,
    percentile,
    server_environment,
    setup_django,
)
from bench.variants import DATA, IMAGES

QUEUE = "bench-on-demand-transforms"
GOAL_FIRST_P50_MS = 400
GOAL_OTHER_P99_MS = 100
WIDTH = 400
QUALITY = 80
PREFIX = "bench-on-demand-"


@dataclass
class Http:
    """One keep-alive HTTP/1.1 connection, as a browser's."""

    base: str
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parts = urlsplit(self.base)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)

    def request(
        self, method: str, path: str, body: Any = None
    ) -> tuple[int, dict[str, str], bytes]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {**self.headers, **({"Content-Type": "application/json"} if data else {})}
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                response = self.conn.getresponse()
                payload = response.read()
                return response.status, {k.lower(): v for k, v in response.getheaders()}, payload
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()  # the server closed a kept-alive connection: open a new one
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        status, _, payload = self.request(method, path, body)
        return status, json.loads(payload or b"null")


@dataclass
class Resolved:
    status: int
    seconds: float
    hops: int
    code: str = ""
    answered_at: float = 0.0  # time.time() of the final answer


def resolve(client: Http, path: str) -> Resolved:
    """GET a delivery URL as a browser does: follow 307 (the wait) until the 302 or a refusal;
    the 302's Location (the store) is not fetched."""
    started = time.perf_counter()
    hops = 0
    while True:
        try:
            status, headers, payload = client.request("GET", path)
        except TimeoutError:
            client.conn.close()
            return Resolved(0, time.perf_counter() - started, hops, "no answer in 60 s")
        if status != 307:
            break
        hops += 1
        path = headers["location"]
    code = ""
    if status >= 400:
        code = json.loads(payload or b"{}").get("error", {}).get("code", "")
    return Resolved(status, time.perf_counter() - started, hops, code, time.time())


def upload(api: Http, data: bytes, name: str, content_type: str) -> str:
    status, started = api.json(
        "POST",
        "/v1/files/upload",
        {"filename": name, "contentType": content_type, "size": len(data)},
    )
    assert status == 201, started
    target = urlsplit(started["upload"]["url"])
    store = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
    store.request(
        "PUT",
        f"{target.path}?{target.query}",
        body=data,
        headers=started["upload"]["headers"],
    )
    assert store.getresponse().status == 200
    store.close()
    file_id: str = started["file"]["id"]
    status, done = api.json("POST", f"/v1/files/{file_id}/complete")
    assert status == 200, done
    return file_id


# --- Where a first request's time goes --------------------------------------------------------


def stage_times(data: bytes, heights: list[int]) -> dict[str, float]:
    """Median ms of each stage of the worker's work on ``data``, in this process: the store
    GET of the original and PUT of a result (through the same gateway the worker uses), and
    imaging.render's own steps done one by one as it does them (reduced-scale JPEG decode,
    resize of the crop, WebP encode)."""
    from PIL import Image

    from storage_service import objectstore
    from variants.imaging import DRAFT_GAP, REDUCING_GAP, WEBP_METHOD, Params, plan

    key = objectstore.new_key("bench-on-demand")
    objectstore.write(key, data, content_type="image/jpeg")
    times: dict[str, list[float]] = {
        "store GET (original)": [],
        "decode (draft)": [],
        "resize": [],
        "encode WebP": [],
        "store PUT (result)": [],
    }
    out_keys = []
    for height in heights:
        t0 = time.perf_counter()
        with objectstore.read(key, max_bytes=len(data) + 1) as stream:
            source = stream.read()
        t1 = time.perf_counter()
        image = Image.open(io.BytesIO(source))
        steps = plan(image.size, Params(WIDTH, height, "cover", "webp", QUALITY))
        assert steps.crop is not None
        crop_w, crop_h = steps.crop[2] - steps.crop[0], steps.crop[3] - steps.crop[1]
        sw, sh = image.size
        need = (
            int(steps.scaled[0] * DRAFT_GAP * sw / crop_w),
            int(steps.scaled[1] * DRAFT_GAP * sh / crop_h),
        )
        image.draft("RGB", need)
        image.load()
        scale = sw / image.size[0]
        box = tuple(v / scale for v in steps.crop)
        t2 = time.perf_counter()
        small = image.resize(
            steps.scaled, Image.Resampling.LANCZOS, box=box, reducing_gap=REDUCING_GAP
        )
        t3 = time.perf_counter()
        buffer = io.BytesIO()
        small.save(buffer, "WEBP", quality=QUALITY, method=WEBP_METHOD)
        t4 = time.perf_counter()
        out_key = objectstore.new_key("bench-on-demand")
        objectstore.write(out_key, buffer.getvalue(), content_type="image/webp")
        t5 = time.perf_counter()
        out_keys.append(out_key)
        for name, seconds in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True):
            times[name].append(seconds * 1000)
    objectstore.delete([key, *out_keys])
    return {name: statistics.median(values) for name, values in times.items()}


def peer_times(data: bytes, heights: list[int]) -> dict[str, float]:
    """Median ms a thumbnail of each height takes, in this process, one thread: the service's
    own pipeline (imaging.render, what the worker runs), pyvips and Pillow alone."""
    from PIL import Image

    from variants.imaging import Params, render

    def service(height: int) -> bytes:
        params = Params(WIDTH, height, "cover", "webp", QUALITY)
        return render(data, params, max_pixels=100_000_000).data

    def pillow(height: int) -> bytes:
        image = Image.open(io.BytesIO(data))
        image.load()
        steps_scale = max(WIDTH / image.width, height / image.height)
        cw, ch = WIDTH / steps_scale, height / steps_scale
        left, top = (image.width - cw) / 2, (image.height - ch) / 2
        small = image.resize(
            (WIDTH, height), Image.Resampling.LANCZOS, box=(left, top, left + cw, top + ch)
        )
        out = io.BytesIO()
        small.save(out, "WEBP", quality=QUALITY)
        return out.getvalue()

    pipelines: dict[str, Callable[[int], bytes]] = {"service (imaging.render)": service}
    try:
        import pyvips

        pyvips.cache_set_max(0)

        def vips(height: int) -> bytes:
            thumb = pyvips.Image.thumbnail_buffer(data, WIDTH, height=height, crop="centre")
            out: bytes = thumb.webpsave_buffer(Q=QUALITY)
            return out

        pipelines["pyvips thumbnail_buffer+webp"] = vips
    except ImportError:
        log("pyvips is not installed (.venv/bin/pip install -r bench/requirements.txt)")
    pipelines["Pillow alone (full decode)"] = pillow
    times: dict[str, list[float]] = {name: [] for name in pipelines}
    for pipeline in pipelines.values():
        pipeline(heights[0])  # warm-up
    for height in heights:  # round-robin, so a change in load hits all alike
        for name, pipeline in pipelines.items():
            t0 = time.perf_counter()
            pipeline(height)
            times[name].append((time.perf_counter() - t0) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


# --- The other tenant -------------------------------------------------------------------------


class Steady(threading.Thread):
    """B: GET /v1/files/<id>, one request after another, recording each latency."""

    def __init__(self, base: str, key: str, file_id: str, pause: float) -> None:
        super().__init__(daemon=True)
        self.client = Http(base, {"Authorization": f"Bearer {key}"})
        self.path, self.pause = f"/v1/files/{file_id}", pause
        self.samples: list[tuple[float, float]] = []  # (started at, ms)
        self.errors = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            at = time.time()
            t0 = time.perf_counter()
            try:
                status, _, _ = self.client.request("GET", self.path)
            except TimeoutError:
                self.client.conn.close()
                status = 0
            self.samples.append((at, (time.perf_counter() - t0) * 1000))
            self.errors += status != 200
            time.sleep(self.pause)

    def between(self, start: float, end: float) -> list[float]:
        return [ms for at, ms in self.samples if start <= at <= end]


def start_worker(url: str) -> subprocess.Popen[bytes]:
    from scripts import devservices

    concurrency = int(os.environ.get("CELERY_CONCURRENCY") or os.cpu_count() or 1)
    command = [str(part) for part in devservices.transform_worker_command(concurrency)]
    log(f"transform worker: {concurrency} process(es), queue {QUEUE}")
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=server_environment(url, SERVICE_TRANSFORM_QUEUE=QUEUE),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_thumbnails(file_ids: list[str], timeout: float = 120) -> None:
    from variants.models import Variant
    from variants.services import THUMBNAIL

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = Variant.objects.filter(
            file_id__in=file_ids, label=THUMBNAIL.label, status="ready"
        ).count()
        if ready == len(file_ids):
            return
        time.sleep(0.2)
    raise SystemExit("the worker did not make the thumbnails in time")


def remove(url: str, project_ids: list[str]) -> None:
    """The projects' rows, and every object they stored (originals and variants)."""
    from files.models import StoredObject
    from storage_service import objectstore

    keys = list(
        StoredObject.objects.filter(project_id__in=project_ids).values_list(
            "storage_key", flat=True
        )
    )
    for start in range(0, len(keys), 500):
        objectstore.delete(keys[start : start + 500])
    for project_id in project_ids:
        delete_project(url, project_id)


def ms(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=int, default=30, help="first requests, one at a time")
    parser.add_argument("--burst", type=int, default=200, help="first requests of the burst")
    parser.add_argument("--burst-concurrency", type=int, default=200)
    parser.add_argument("--b-pause", type=float, default=0.01, help="B's pause between GETs")
    args = parser.parse_args()

    url = bench_database_url()
    ensure_database(url)
    os.environ["SERVICE_TRANSFORM_QUEUE"] = QUEUE  # the API's routing, read by its settings
    setup_django(url)
    logging.getLogger("pyvips").setLevel(logging.WARNING)  # its INFO lines are per call
    from accounts.models import Project
    from accounts.services import api_key_issue, project_create
    from accounts.tenancy import Tenant
    from delivery import signing
    from delivery.services import delivery_key_create
    from variants.models import Variant

    for old in Project.objects.filter(name__startswith=PREFIX).values_list("id", flat=True):
        log(f"removing the leftover project {old}")
        remove(url, [old])
    subprocess.run([sys.executable, "-m", "bench.variants", "--inputs"], check=True, cwd=ROOT)
    photo = (DATA / IMAGES["jpeg 4000x3000"]).read_bytes()

    project_a = project_create(name=f"{PREFIX}a-{int(time.time())}")
    project_b = project_create(name=f"{PREFIX}b-{int(time.time())}")
    key_a = api_key_issue(project=project_a, environment="test").raw_key
    key_b = api_key_issue(project=project_b, environment="test").raw_key
    issued = delivery_key_create(tenant=Tenant(project=project_a, mode="test"))
    per_file = 40  # below SERVICE_VARIANT_MAX_PER_VERSION (50) with the thumbnail
    files_needed = 1 + -(-args.burst // per_file)

    worker = start_worker(url)
    load_start = Path("/proc/loadavg").read_text().split()[:3]
    try:
        with api_server(url) as server:
            api_a = Http(server.base_url, {"Authorization": f"Bearer {key_a}"})
            api_b = Http(server.base_url, {"Authorization": f"Bearer {key_b}"})
            log(f"uploading the {len(photo) / 1e6:.1f} MB JPEG as {files_needed} files of A")
            photos = [
                upload(api_a, photo, f"photo-{k}.jpg", "image/jpeg") for k in range(files_needed)
            ]
            b_file = upload(api_b, b"hello", "b.txt", "text/plain")
            wait_thumbnails(photos)

            def path(file_id: str, height: int) -> str:
                options = signing.Options(width=WIDTH, height=height, format="webp")
                return signing.delivery_path(issued.secret, issued.key.id, file_id, options)

            browser = Http(server.base_url, {"Accept": "image/avif,image/webp,*/*"})
            for height in range(100, 104):  # warm-up: every worker process, every path
                warm = resolve(browser, path(photos[0], height))
                assert warm.status == 302, warm

            # 2. First requests, one at a time.
            heights = list(range(300, 300 + args.sizes))
            first: list[Resolved] = []
            for height in heights:
                first.append(resolve(browser, path(photos[0], height)))
                time.sleep(0.2)  # the worker idle again, as for a page's first visitor
            bad = [r for r in first if r.status != 302]
            assert not bad, bad
            rows = {
                v.height: v
                for v in Variant.objects.filter(
                    file_id=photos[0], height__in=heights, status="ready"
                )
            }
            queue_ms = [
                (rows[h].started_at - rows[h].created_at).total_seconds() * 1000 for h in heights
            ]
            work_ms = [
                (rows[h].finished_at - rows[h].started_at).total_seconds() * 1000 for h in heights
            ]
            told_ms = [
                (r.answered_at - rows[h].finished_at.timestamp()) * 1000
                for h, r in zip(heights, first, strict=True)
            ]
            first_ms = [r.seconds * 1000 for r in first]
            hops = Counter(r.hops for r in first)
            p50 = percentile(first_ms, 50)
            print(
                f"on demand: {len(photo) / 1e6:.1f} MB 4000x3000 JPEG -> {WIDTH} px wide"
                f" WebP q{QUALITY}"
            )
            print(f"load average (1, 5, 15 min) at start: {' '.join(load_start)}")
            print(f"server: {server.describe()}")
            print(
                f"\nfirst request of a new size, one at a time ({len(first)} sizes): "
                f"p50 {ms(p50)} ms, p95 {ms(percentile(first_ms, 95))} ms, "
                f"max {ms(max(first_ms))} ms; "
                f"307 hops: {dict(sorted(hops.items()))}"
            )
            print(
                "  queue wait (created -> claimed by a worker)  "
                f"p50 {ms(percentile(queue_ms, 50))} ms"
                f"  p95 {ms(percentile(queue_ms, 95))} ms"
            )
            print(
                f"  worker (claimed -> ready: store GET, render, store PUT, rows)  "
                f"p50 {ms(percentile(work_ms, 50))} ms  p95 {ms(percentile(work_ms, 95))} ms"
            )
            print(
                f"  ready -> 302 at the client (the wait learning of it)  "
                f"p50 {ms(percentile(told_ms, 50))} ms  p95 {ms(percentile(told_ms, 95))} ms"
            )

            # 3. The burst, beside B.
            steady = Steady(server.base_url, key_b, b_file, args.b_pause)
            steady.start()
            time.sleep(3)
            quiet_end = time.time()
            burst_paths = [
                path(photos[1 + k // per_file], 1000 + k % per_file) for k in range(args.burst)
            ]
            local = threading.local()

            def one(target: str) -> Resolved:
                if not hasattr(local, "client"):
                    local.client = Http(server.base_url, {"Accept": "image/webp,*/*"})
                return resolve(local.client, target)

            burst_start = time.time()
            with ThreadPoolExecutor(max_workers=args.burst_concurrency) as pool:
                burst = list(pool.map(one, burst_paths))
            burst_end = time.time()
            steady.stop.set()
            steady.join()
            b_quiet = steady.between(quiet_end - 3, quiet_end)
            b_burst = steady.between(burst_start, burst_end)
            _ = api_b
    finally:
        os.killpg(worker.pid, 15)
        worker.wait(timeout=30)
        remove(url, [project_a.id, project_b.id])

    stages = stage_times(photo, heights[:10])
    peers = peer_times(photo, heights[:10])
    load_end = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average (1, 5, 15 min) at end: {' '.join(load_end)}")

    print("\nthe worker's stages, timed again in this process (median of 10 sizes):")
    for name, value in stages.items():
        print(f"  {name:<24} {ms(value):>6} ms")
    print("\nthe render alone, same input and sizes, one thread (median):")
    ours = peers["service (imaging.render)"]
    for name, value in peers.items():
        print(
            f"  {name:<32} {ms(value):>6} ms   first request p50 / this: {p50 / value:5.2f}"
            f"   render / this: {ours / value:4.2f}"
        )

    outcomes = Counter("302" if r.status == 302 else f"{r.status} {r.code}".strip() for r in burst)
    burst_ms = [r.seconds * 1000 for r in burst]
    print(
        f"\nburst: {len(burst)} first requests of A for distinct sizes, "
        f"{args.burst_concurrency} in flight, done in {burst_end - burst_start:.1f} s"
    )
    print(f"  A's answers: {dict(outcomes)}")
    print(
        f"  A's time to the answer: p50 {ms(percentile(burst_ms, 50))} ms, "
        f"p95 {ms(percentile(burst_ms, 95))} ms, max {ms(max(burst_ms))} ms; "
        f"307 hops max {max(r.hops for r in burst)}"
    )
    b_p99 = percentile(b_burst, 99)
    print(
        f"  B's GET /v1/files/<id>: before the burst p50 {ms(percentile(b_quiet, 50))} ms "
        f"p99 {ms(percentile(b_quiet, 99))} ms ({len(b_quiet)}); during it "
        f"p50 {ms(percentile(b_burst, 50))} ms p99 {ms(b_p99)} ms max {ms(max(b_burst))} ms "
        f"({len(b_burst)} requests, {steady.errors} not 200)"
    )
    not_ready = outcomes.get("503 VARIANT_NOT_READY", 0)
    print()
    print(
        f"[{'PASS' if p50 < GOAL_FIRST_P50_MS else 'FAIL'}] first request p50 "
        f"{ms(p50)} ms < {GOAL_FIRST_P50_MS} ms"
    )
    print(
        f"[{'PASS' if b_p99 < GOAL_OTHER_P99_MS else 'FAIL'}] B's p99 during the burst "
        f"{ms(b_p99)} ms < {GOAL_OTHER_P99_MS} ms"
    )
    print(f"[INFO] A's 503 VARIANT_NOT_READY during the burst: {not_ready} of {len(burst)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
