"""Thumbnails per second on one core, and peak memory: the service's pipeline vs naive Pillow
vs libvips (pyvips). Run: ``.venv/bin/python -m bench.variants`` (needs bench/requirements.txt).

Each image is made to a 256-pixel-box WebP at quality 80 by three pipelines:

- ``service``: ``variants.imaging.render``, exactly what the workers run;
- ``naive``: Pillow as commonly written: open, full decode, LANCZOS resize, save;
- ``pyvips``: ``pyvips.Image.thumbnail_buffer`` then ``webpsave_buffer`` (libvips'
  shrink-on-load, streaming), with libvips' operation cache off so no call is answered from
  a previous identical one.

Everything runs pinned to one CPU (``os.sched_setaffinity``) with one thread
(``VIPS_CONCURRENCY=1``, ``OMP_NUM_THREADS=1``). Rates: one process per image runs the three
pipelines round-robin (one thumbnail each per round, for at least ``BENCH_VARIANTS_SECONDS``
and 8 rounds), so a change in the machine's load hits all three alike; the figure is the
median time per thumbnail. Peak memory: a fresh process per (pipeline, image) makes three
thumbnails, so its peak RSS (``ru_maxrss``) is that pipeline's alone ("start" is the RSS with
the libraries imported and the source bytes read, before the first thumbnail). The source
bytes are in memory first, as the worker has them.

The inputs are synthetic but photo-like (smooth gradients, soft texture, fine detail and some
noise), generated once into ``var/bench-variants/``: a 4000x3000 JPEG (quality 90, about a
12-megapixel camera photo) and a 2000x2000 PNG.
"""

from __future__ import annotations

import io
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "var" / "bench-variants"
PIPELINES = ("service", "naive", "pyvips")
IMAGES = {"jpeg 4000x3000": "photo-4000x3000.jpg", "png 2000x2000": "photo-2000x2000.png"}
BOX = 256
QUALITY = 80
MIN_SECONDS = float(os.environ.get("BENCH_VARIANTS_SECONDS", "6"))
MIN_RUNS = 8


def log(message: str) -> None:
    print(f"bench | {message}", file=sys.stderr, flush=True)


# --- Inputs ---------------------------------------------------------------------------------


def photo_like(size: tuple[int, int]) -> object:
    from PIL import Image, ImageFilter

    w, h = size
    gradient = Image.linear_gradient("L").resize(size)
    texture = Image.effect_noise((w // 8, h // 8), 60).resize(size, Image.Resampling.BICUBIC)
    detail = Image.effect_mandelbrot(size, (-2.2, -1.2, 1.0, 1.2), 120)
    grain = Image.effect_noise(size, 6)
    red = Image.blend(gradient, detail, 0.5)
    green = Image.blend(texture, grain, 0.15)
    blue = Image.blend(gradient.transpose(Image.Transpose.ROTATE_180), texture, 0.4)
    return Image.merge("RGB", (red, green, blue)).filter(ImageFilter.SMOOTH)


def ensure_inputs() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    jpeg, png = DATA / IMAGES["jpeg 4000x3000"], DATA / IMAGES["png 2000x2000"]
    if not jpeg.exists():
        photo_like((4000, 3000)).save(jpeg, "JPEG", quality=90)  # type: ignore[attr-defined]
    if not png.exists():
        photo_like((2000, 2000)).save(png, "PNG")  # type: ignore[attr-defined]


# --- One pipeline in one pinned process -------------------------------------------------------


def make_pipeline(name: str):  # type: ignore[no-untyped-def]
    if name == "service":
        from variants.imaging import Params, render

        params = Params(BOX, BOX, "inside", "webp", QUALITY)
        return lambda data: render(data, params, max_pixels=100_000_000).data
    if name == "naive":
        from PIL import Image

        def naive(data: bytes) -> bytes:
            image = Image.open(io.BytesIO(data))
            image.load()
            scale = min(BOX / image.width, BOX / image.height)
            size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
            small = image.resize(size, Image.Resampling.LANCZOS)
            out = io.BytesIO()
            small.save(out, "WEBP", quality=QUALITY)
            return out.getvalue()

        return naive
    import pyvips

    pyvips.cache_set_max(0)
    return lambda data: pyvips.Image.thumbnail_buffer(data, BOX, height=BOX).webpsave_buffer(
        Q=QUALITY
    )


def pin() -> int:
    cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def memory_worker(name: str, path: str) -> None:
    """Peak RSS of one pipeline alone, in this fresh process."""
    pin()
    data = Path(path).read_bytes()
    pipeline = make_pipeline(name)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(3):
        out = pipeline(data)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {"peak_mb": peak / 1024, "start_mb": baseline / 1024, "out_kb": len(out) / 1024}
    print(json.dumps(result))


def rate_worker(path: str) -> None:
    """Per-thumbnail times of the three pipelines, interleaved round by round, so a machine
    whose load changes during the run slows all three alike."""
    pin()
    data = Path(path).read_bytes()
    pipelines = {name: make_pipeline(name) for name in PIPELINES}
    for pipeline in pipelines.values():
        pipeline(data)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in PIPELINES}
    started = time.perf_counter()
    rounds = 0
    while rounds < MIN_RUNS or time.perf_counter() - started < MIN_SECONDS:
        for name, pipeline in pipelines.items():
            t0 = time.perf_counter()
            pipeline(data)
            times[name].append(time.perf_counter() - t0)
        rounds += 1
    print(json.dumps({name: statistics.median(t) * 1000 for name, t in times.items()}))


def quality_worker(path: str) -> None:
    """PSNR of each pipeline's thumbnail (decoded) against a reference: the full-size decode
    resized with LANCZOS by Pillow, not encoded. All three pay the same WebP q80 loss; the
    differences are the shortcuts each takes (DCT scaling, box reduction)."""
    from PIL import Image, ImageChops, ImageStat

    data = Path(path).read_bytes()
    original = Image.open(io.BytesIO(data)).convert("RGB")
    results = {}
    for name in PIPELINES:
        thumb = Image.open(io.BytesIO(make_pipeline(name)(data))).convert("RGB")
        reference = original.resize(thumb.size, Image.Resampling.LANCZOS)
        squared = ImageChops.difference(thumb, reference).point(lambda v: v * v)
        mse = sum(ImageStat.Stat(squared).mean) / 3
        results[name] = 10 * math.log10(255**2 / mse) if mse else 99.0
    print(json.dumps(results))


def child(*args: str) -> Any:
    env = {**os.environ, "VIPS_CONCURRENCY": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.variants", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    # In a child process: this one must stay small, because a child's peak RSS starts from
    # its parent's (Linux keeps the high-water mark across fork and exec).
    subprocess.run([sys.executable, "-m", "bench.variants", "--inputs"], check=True)
    print("variants: 256-px-box WebP q80 thumbnails, one core, one thread")
    print(
        f"load average at start: {os.getloadavg()[0]:.2f} (this machine has {os.cpu_count()} CPUs)"
    )
    print(
        f"{'image':<16} {'pipeline':<8} {'thumbs/s':>9} {'ms each':>8} {'peak MB':>8}"
        f" {'start MB':>9} {'out KB':>7} {'PSNR dB':>8}"
    )
    for label, filename in IMAGES.items():
        path = str(DATA / filename)
        log(f"{label}: rates")
        ms = child("--rates", path)
        psnr = child("--quality", path)
        memory = {}
        for name in PIPELINES:
            log(f"{label}: memory of {name}")
            memory[name] = child("--memory", name, path)
            m = memory[name]
            print(
                f"{label:<16} {name:<8} {1000 / ms[name]:>9.1f} {ms[name]:>8.1f}"
                f" {m['peak_mb']:>8.1f} {m['start_mb']:>9.1f} {m['out_kb']:>7.1f}"
                f" {psnr[name]:>8.1f}"
            )
        print(
            f"{label:<16} service: {ms['naive'] / ms['service']:.1f}x the naive rate,"
            f" {ms['pyvips'] / ms['service']:.2f}x the pyvips rate;"
            f" peak {memory['service']['peak_mb']:.0f} MB vs pyvips"
            f" {memory['pyvips']['peak_mb']:.0f} MB"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print(
        "goals: JPEG >= 5x naive; both images >= the pyvips rate with less peak memory."
        " PSNR: against a full decode + LANCZOS (higher is closer)."
    )


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--memory":
        memory_worker(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "--rates":
        rate_worker(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "--quality":
        quality_worker(sys.argv[2])
    elif sys.argv[1:] == ["--inputs"]:
        ensure_inputs()
    else:
        main()
