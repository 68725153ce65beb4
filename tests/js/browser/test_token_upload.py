"""A static page with an upload token alone, in headless Chromium (token.browser.mjs holds the
steps): served from an origin of its own with no server code, it uploads 30 MiB in parts and
an image in one PUT, shows the refusals, and never holds the key. The stored bytes are then
checked with the key."""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from files.models import File
from tests.factories import Actor
from tests.js.browser.conftest import run_browser, store_cors_allows
from tests.js.conftest import JS, ROOT

MIB = 1024 * 1024
PAGE = ROOT / "examples" / "token-upload" / "index.html"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def static_origin(tmp_path: Path) -> Iterator[str]:
    """The page and the client's browser build, served as plain files by a static server:
    the page has no server code of its own."""
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(PAGE, site / "index.html")
    shutil.copytree(JS / "dist", site / "client")
    handler = functools.partial(QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    origin = f"http://localhost:{server.server_address[1]}"
    try:
        with store_cors_allows(origin):
            yield origin
    finally:
        server.shutdown()
        server.server_close()


def test_a_static_page_uploads_with_a_token_alone(
    static_origin: str, api_base: str, actor: Actor, artifacts: Path, tmp_path: Path
) -> None:
    key = {"Authorization": f"Bearer {actor.key.raw_key}"}
    minted = requests.post(
        f"{api_base}/v1/upload-tokens",
        json={
            "path": "browser",
            "maxFileSizeBytes": 31 * MIB,
            "allowedContentTypes": ["image/*", "application/octet-stream"],
            "maxFiles": 2,
            "allowedOrigins": [static_origin],
        },
        headers=key,
        timeout=30,
    )
    assert minted.status_code == 201, minted.text
    token = minted.json()["data"]["token"]
    results = tmp_path / "results.json"

    run = run_browser(
        "token.browser.mjs",
        env={
            "PAGE_URL": f"{static_origin}/index.html#token={token}&api={api_base}",
            "API_KEY": actor.key.raw_key,
            "RESULTS": str(results),
        },
        artifacts=artifacts,
        timeout=300,
    )

    assert run.returncode == 0, run.output
    assert run.counts.get("fail") == 0 and run.counts.get("pass") == 6, run.output
    digests = json.loads(results.read_text())
    assert len(digests) == 2
    for file_id, digest in digests.items():
        url = requests.post(
            f"{api_base}/v1/files/{file_id}/download-url", json={}, headers=key, timeout=30
        ).json()["url"]
        assert hashlib.sha256(requests.get(url, timeout=60).content).hexdigest() == digest
    files = File.objects.filter(project=actor.project)
    assert sorted(files.values_list("size", flat=True))[-1] == 30 * MIB
    assert {f.upload_token_id for f in files} == {minted.json()["data"]["uploadToken"]["id"]}
    assert {f.status for f in files} == {"uploaded"} and {f.path for f in files} == {"browser"}
    for name in ("too-large", "wrong-type", "parts-done", "image-done", "exhausted"):
        shots = list(artifacts.glob(f"token-*-{name}.png"))
        assert shots and shots[0].stat().st_size > 1000, name
