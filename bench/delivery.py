"""Delivery URLs beside Supabase Storage's signed URLs, in one run: resolutions per second of a
ready variant, and a page's 1,000 thumbnails fetched end to end as a browser fetches them.

    .venv/bin/python -m bench.delivery --peer-url http://127.0.0.1:5000 --peer-key <service key>
        [--rounds 3] [--duration 8] [--warmup 2] [--thumbnails 1000] [--concurrency 6]
        [--peer-bucket bench-delivery] [--delivery apart|api]

Setup (unmeasured): a fresh project in the bench database with a delivery key, ``--thumbnails``
photo-like JPEGs (1200x900) uploaded through the API with the Python client, their
thumbnails (256-pixel WebP, made on upload) and one 340-pixel WebP variant of the first (the
30 KB image) rendered in this process by the workers' own code. The peer's private bucket
gets the very same bytes: the 30 KB image and one object per thumbnail (overwritten if there,
left in place).

Delivery URLs resolve on a delivery server beside the API (``--delivery apart``, the
default: ``python -m storage_service.serving --role delivery``, as ``make run`` starts it), or
on the API itself (``--delivery api``: a deployment of one server); the API's GET is always
the API's.

1. **Resolution**, wrk (2 threads, 16 connections) one after the other in each round:
   ``GET /d/…`` of the 30 KB variant (a 302 to the store; no Authorization: the URL is the
   credential), our ``GET /v1/files/<id>`` with the API key, and the peer's ``GET
   /object/sign/<bucket>/<path>?token=…`` of the same bytes (it verifies the JWT and streams
   the object from its store). Ratios divide figures of the same round.
2. **End to end**: bench/delivery_fetch.mjs (Node's fetch) fetches every thumbnail, following
   redirects, ``--concurrency`` at a time, through our delivery URLs (signed offline, as an
   application's server signs them) and through the peer's signed URLs (signed in one call
   beforehand), alternately ours first and the peer first.

Both servers get the same store (the peer on S3 pointed at the store the bench uses, when run
as bench/README.md says), so the bytes come from the same place. Goals: resolution at least
2x our GET and 1.5x the peer's signed URL; end to end at least 1.0x the peer.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import _common as bench
from bench.api_throughput import Load, Measure, Peer, Remote, Round, run_wrk
from bench.delivery_peer import (
    IMAGE_ACCEPT,
    PEER_IMAGE,
    PEER_THUMBS,
    check,
    peer_seed,
    peer_signed,
)
from bench.delivery_report import (
    GET,
    GET_FRONTED,
    PEER_SIGNED,
    RESOLVE,
    RESOLVE_FRONTED,
    Fetched,
    report,
)
from scripts.servers.nginx import nginx_in_front

PROJECT_PREFIX = "bench-delivery-"
# Enqueued thumbnails go to a queue of the bench's own, emptied at the end: this process
# renders them, and no worker of a `make run` on the same Redis may take them.
TRANSFORM_QUEUE = "bench-delivery-transforms"
SOURCE_SIZE = (1200, 900)
IMAGE_WIDTH = 340  # the 30 KB image: a 340-pixel WebP of a 1200x900 photo
THUMBNAIL_BOX = 256  # the thumbnail every image gets: a WebP at quality 80 inside 256x256
FOLDER = "bench/delivery"


def photo_jpeg() -> bytes:
    from bench.variants import photo_like

    out = io.BytesIO()
    photo_like(SOURCE_SIZE).save(out, "JPEG", quality=90)  # type: ignore[attr-defined]
    return out.getvalue()


def stored_bytes(storage_key: str) -> bytes:
    from storage_service import objectstore

    answer = objectstore.client().get_object(Bucket=objectstore.bucket(), Key=storage_key)
    body: bytes = answer["Body"].read()
    return body


def render_pending(project_id: str) -> int:
    """Render every pending variant of the project here, with the workers' own code."""
    from variants.models import Variant
    from variants.services import variant_process

    pending = list(
        Variant.objects.filter(project_id=project_id, status="pending").values_list("id", flat=True)
    )
    for variant_id in pending:
        variant_process(variant_id=variant_id)
    return len(pending)


def purge_transform_queue() -> None:
    """Drop the thumbnails' messages the uploads sent (this process rendered them)."""
    from kombu import Queue

    from storage_service.celery import app

    with app.connection_for_write() as connection:
        Queue(TRANSFORM_QUEUE, channel=connection.default_channel).purge()


def remove(url: str, project_id: str) -> None:
    """The project's objects, then its rows. A store too busy to delete them in time keeps
    the project, which the next run removes as a leftover."""
    from files.models import StoredObject
    from storage_service import objectstore
    from storage_service.errors import StorageUnavailable

    keys = list(
        StoredObject.objects.filter(project_id=project_id).values_list("storage_key", flat=True)
    )
    bench.log(f"removing {len(keys)} stored object(s) and the project")
    try:
        for start in range(0, len(keys), 100):  # small batches: each answers within the timeout
            objectstore.delete(keys[start : start + 100])
    except StorageUnavailable as exc:
        bench.log(f"the store did not delete them ({exc}); the next run removes the project")
        return
    bench.delete_project(url, project_id)


# --- Measuring ------------------------------------------------------------------------------


def measure_load(server: Any, key: str | None, load: Load, args: argparse.Namespace) -> Measure:
    """A warm-up, then the measured wrk run, with the server's and PostgreSQL's CPU."""
    run_wrk(server.base_url, key, load, args.warmup, None)
    before = server.cpu()
    measure = run_wrk(server.base_url, key, load, args.duration, None)
    used = server.cpu() - before
    measure.other_cores = max(0.0, used.machine - used.server - used.postgres) / measure.seconds
    served = max(1, measure.requests - measure.errors)
    measure.server_ms = used.server * 1000 / served
    measure.postgres_ms = max(0.0, used.postgres) * 1000 / served
    return measure


@dataclass
class Fronted:
    """nginx in front of our servers: its master and workers are one process group."""

    base_url: str
    group: int

    def cpu(self) -> bench.CpuTimes:
        return bench.cpu_times(self.group)


def fetch_all(urls_file: Path, concurrency: int, server: Any, store: int | None) -> Fetched:
    store_cpu = (lambda: bench.process_cpu(store)) if store else (lambda: 0.0)
    before, store_before = server.cpu(), store_cpu()
    done = subprocess.run(
        [
            shutil.which("node") or "node",
            str(bench.ROOT / "bench" / "delivery_fetch.mjs"),
            str(urls_file),
        ],
        env={**os.environ, "CONCURRENCY": str(concurrency)},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    used = server.cpu() - before
    if done.returncode != 0:
        raise SystemExit(f"the fetching client failed:\n{done.stdout}{done.stderr}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return Fetched(
        seconds=figures["seconds"],
        count=figures["count"],
        bytes=figures["bytes"],
        failures=figures["failures"],
        client_cpu=figures["cpuSeconds"],
        server_cpu=used.server,
        store_cpu=store_cpu() - store_before,
        # A PostgreSQL process that exits meanwhile takes its CPU time with it.
        postgres_cpu=max(0.0, used.postgres),
    )


# --- Run ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--peer-url", required=True, help="Supabase Storage, e.g. http://127.0.0.1:5000"
    )
    parser.add_argument(
        "--peer-key", required=True, help="the peer's service key (a service_role JWT)"
    )
    parser.add_argument("--peer-bucket", default="bench-delivery")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0, help="measured seconds per load")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first")
    parser.add_argument("--thumbnails", type=int, default=1000)
    parser.add_argument(
        "--delivery",
        choices=["apart", "api"],
        default="apart",
        help="resolve on a delivery server beside the API (default), or on the API",
    )
    parser.add_argument(
        "--concurrency", type=int, default=6, help="end to end: requests in flight (a browser's 6)"
    )
    parser.add_argument(
        "--no-nginx",
        action="store_true",
        help="leave out the two requests through nginx (deploy/nginx/storage-delivery.conf)",
    )
    args = parser.parse_args()
    for tool in ("wrk", "node"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (bench/README.md)")
    peer = Peer(args.peer_url.rstrip("/"), args.peer_key, args.peer_bucket)

    # Before Django and the API server read their settings (the server inherits them).
    os.environ["SERVICE_TRANSFORM_QUEUE"] = TRANSFORM_QUEUE
    # The project's resolution budget stays on (its Redis round trip is part of the cost),
    # with a budget no run reaches, as the API keys' limits in every bench.
    os.environ["SERVICE_DELIVERY_RATE_PER_MINUTE"] = str(10**9)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)
    from django.conf import settings
    from storage_client import Client

    from accounts.models import Project
    from accounts.services import api_key_issue, project_create
    from accounts.tenancy import Tenant
    from delivery.services import delivery_key_create
    from storage_service import objectstore
    from variants.imaging import Params
    from variants.models import Variant
    from variants.services import variant_transform

    for old in Project.objects.filter(name__startswith=PROJECT_PREFIX).values_list("id", flat=True):
        bench.log(f"removing the leftover project {old}")
        remove(url, old)
    project = project_create(name=f"{PROJECT_PREFIX}{int(time.time())}")
    tenant = Tenant(project=project, mode="test")
    raw_key = api_key_issue(project=project, environment="test", name="bench").raw_key
    issued = delivery_key_create(tenant=tenant)
    workdir = Path(tempfile.mkdtemp(prefix="bench-delivery-"))
    rounds: list[Round] = []
    passes: list[tuple[Fetched, Fetched]] = []
    store = bench.listener_pid(
        urllib.parse.urlsplit(objectstore.storage().endpoint_url or "").port or 0
    )
    address = urllib.parse.urlsplit(peer.url)
    if address.hostname in ("127.0.0.1", "localhost"):
        peer.pid = bench.listener_pid(address.port or 80)
    try:
        with (
            bench.api_server(url) as api,
            (
                bench.api_server(url, role="delivery", ready_path="/healthz")
                if args.delivery == "apart"
                else contextlib.nullcontext(api)
            ) as delivery,
            contextlib.ExitStack() as stack,
        ):
            client = Client(
                api_key=raw_key,
                base_url=api.base_url,
                delivery_key=f"{issued.key.id}:{issued.secret}",
            )
            source = photo_jpeg()
            bench.log(f"uploading {args.thumbnails} photos of {len(source):,} bytes")

            def upload(number: int) -> str:
                file = client.files.upload(
                    io.BytesIO(source), filename=f"photo-{number:04d}.jpg", path=FOLDER
                )
                return file.id

            with ThreadPoolExecutor(4) as pool:
                file_ids = list(pool.map(upload, range(args.thumbnails)))
            image_variant = variant_transform(
                tenant=tenant,
                file_id=file_ids[0],
                params=Params(
                    width=IMAGE_WIDTH, height=None, fit="inside", format="webp", quality=80
                ),
            )
            bench.log(f"rendering the thumbnails and the {IMAGE_WIDTH}-pixel image here")
            rendered = render_pending(project.id)
            image_variant = Variant.objects.select_related("output_object").get(id=image_variant.id)
            thumb_variant = (
                Variant.objects.select_related("output_object")
                .filter(file_id=file_ids[0], width=THUMBNAIL_BOX, status="ready")
                .get()
            )
            assert image_variant.output_object and thumb_variant.output_object
            image = stored_bytes(image_variant.output_object.storage_key)
            thumbnail = stored_bytes(thumb_variant.output_object.storage_key)
            bench.log(
                f"{rendered} variants made; the image {len(image):,} bytes, a thumbnail "
                f"{len(thumbnail):,}; seeding the peer's bucket {peer.bucket}"
            )
            peer_seed(peer, image, thumbnail, args.thumbnails)

            image_url = client.files.delivery_url(
                file_ids[0], width=IMAGE_WIDTH, fit="inside", format="webp", quality=80
            )
            thumb_urls = [
                client.files.delivery_url(
                    file_id,
                    width=THUMBNAIL_BOX,
                    height=THUMBNAIL_BOX,
                    fit="inside",
                    format="webp",
                    quality=80,
                )
                for file_id in file_ids
            ]
            peer_image_url = peer_signed(peer, [PEER_IMAGE])[0]
            peer_thumb_urls = peer_signed(
                peer, [f"{PEER_THUMBS}/thumb-{n:04d}.webp" for n in range(args.thumbnails)]
            )
            check(image_url, peer_image_url, image)
            check(thumb_urls[-1], peer_thumb_urls[-1], thumbnail)
            client.close()

            loads = [
                (
                    delivery,
                    None,
                    Load(
                        RESOLVE, "api", urllib.parse.urlsplit(image_url).path, accept=IMAGE_ACCEPT
                    ),
                ),
                (api, raw_key, Load(GET, "api", f"/v1/files/{file_ids[0]}")),
                (
                    Remote(peer.url, peer.pid),
                    None,
                    Load(
                        PEER_SIGNED,
                        "peer",
                        peer_image_url.removeprefix(peer.url),
                        accept=IMAGE_ACCEPT,
                    ),
                ),
            ]
            if not args.no_nginx:
                # One worker, as the delivery server and the API each get two cores' share.
                front = stack.enter_context(
                    nginx_in_front(
                        api=api.base_url,
                        delivery=delivery.base_url,
                        directory=workdir / "nginx",
                        access_log=False,
                    )
                )
                fronted = Fronted(front.base_url, front.proc.pid)
                resolve_path = urllib.parse.urlsplit(image_url).path
                loads += [
                    (
                        fronted,
                        None,
                        Load(RESOLVE_FRONTED, "api", resolve_path, accept=IMAGE_ACCEPT),
                    ),
                    (fronted, raw_key, Load(GET_FRONTED, "api", f"/v1/files/{file_ids[0]}")),
                ]
            for number in range(1, args.rounds + 1):
                this = Round()
                for server, key, load in loads:
                    bench.log(f"round {number}: {load.label}")
                    this.measures[load.label] = measure_load(server, key, load, args)
                rounds.append(this)

            ours_file, peer_file = workdir / "ours.txt", workdir / "peer.txt"
            # Signed on the API's host; the same paths on the delivery server's.
            ours_file.write_text(
                "".join(
                    url.replace(api.base_url, delivery.base_url, 1) + "\n" for url in thumb_urls
                )
            )
            peer_file.write_text("\n".join(peer_thumb_urls) + "\n")
            peer_server = Remote(peer.url, peer.pid)
            for number in range(1, args.rounds + 1):
                bench.log(f"round {number}: {args.thumbnails} thumbnails end to end")
                if number % 2:
                    ours = fetch_all(ours_file, args.concurrency, delivery, store)
                    theirs = fetch_all(peer_file, args.concurrency, peer_server, store)
                else:
                    theirs = fetch_all(peer_file, args.concurrency, peer_server, store)
                    ours = fetch_all(ours_file, args.concurrency, delivery, store)
                for side in (ours, theirs):
                    if side.failures or side.bytes != len(thumbnail) * args.thumbnails:
                        raise SystemExit(f"a pass fetched wrong bytes: {side}")
                passes.append((ours, theirs))
            api_line = api.describe()
            if delivery is not api:
                api_line += f"; delivery: {delivery.describe()}"
        # Before the cleanup, which a busy store may make slow.
        report(
            rounds, passes, args, peer, api_line, bool(settings.DEBUG), len(image), len(thumbnail)
        )
    finally:
        purge_transform_queue()
        remove(url, project.id)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
