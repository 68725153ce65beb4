"""Delivery URLs in real Chromium (tests/js/browser/delivery.browser.mjs loads the page): three
sizes made on demand by the real worker, AVIF or WebP by the browser's Accept, and a reload
served by the browser's cache, which the API's own count of resolutions confirms."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from PIL import Image

from tests.factories import Actor
from tests.helpers import served_downloads, uploaded_file
from tests.js.browser.conftest import run_browser

WIDTHS = (120, 200, 320)


def photo() -> bytes:
    image = Image.new("RGB", (640, 400))
    image.putdata([(x % 256, (x * y) % 256, y % 256) for y in range(400) for x in range(640)])
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=85)
    return buffer.getvalue()


def test_a_page_of_delivery_urls_in_chromium(
    delivery_base: str, actor: Actor, celery_worker: subprocess.Popen, artifacts: Path
) -> None:
    assert actor.post("/v1/delivery-keys", {}).status_code == 201
    file = uploaded_file(actor, photo(), filename="photo.jpg", contentType="image/jpeg")
    urls = []
    for width in WIDTHS:
        signed = actor.post(
            f"/v1/files/{file['id']}/delivery-url",
            {"transform": {"width": width, "format": "auto"}},
        ).json()["url"]
        urls.append([width, delivery_base + urlsplit(signed).path])

    run = run_browser("delivery.browser.mjs", {"URLS": json.dumps(urls)}, artifacts, timeout=180)
    assert run.returncode == 0, run.output
    assert run.counts.get("pass") == 2, run.output
    # Every 302 the delivery server answered counted once: the first load's, never the reload's.
    report = json.loads((artifacts / "delivery-report.json").read_text())
    # The redirects' bytes, sent by the server in batches to Redis, into the day's row.
    redirects = served_downloads(actor, len(WIDTHS))
    assert redirects == len(WIDTHS), (redirects, report)
    assert (artifacts / "delivery-2-reloaded.png").is_file()
