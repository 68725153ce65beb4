"""Real-browser tests: headless Chromium (Debian's package, `make chromium`) driven by
playwright-core from Node scripts in this folder, against the real stack (the API server and
the actor are tests/js/conftest.py's). The page is the browser-upload example
(examples/browser-upload), served by its own Node server on an origin of its own; the store
(SeaweedFS) is a third origin, so every PUT is a CORS request.

Screenshots land in var/test-artifacts/browser/<pytest worker>/ (gw0, gw1, or main).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from botocore.exceptions import ClientError

from scripts.servers import cors_rule  # the rule `make run` and `make test` put on the buckets
from storage_service import objectstore
from tests.js.conftest import ROOT, NodeRun, node, run_node
from tests.servers import free_port

ARTIFACTS = ROOT / "var" / "test-artifacts" / "browser"
EXAMPLE = ROOT / "examples" / "browser-upload" / "server.mjs"


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.fail("no `chromium` on PATH: `make chromium` installs Debian's package")
    return found


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """This run's screenshots and reports: a folder per pytest worker, emptied at its start,
    so one worker never deletes what the other's browser tests just wrote."""
    folder = ARTIFACTS / os.environ.get("PYTEST_XDIST_WORKER", "main")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def run_browser(script: str, env: dict[str, str], artifacts: Path, timeout: float) -> NodeRun:
    run = run_node(
        ["--test", "--test-reporter=tap", str(Path(__file__).parent / script)],
        env={"CHROMIUM": chromium(), "ARTIFACTS": str(artifacts), **env},
        timeout=timeout,
        cwd=ROOT,
    )
    (artifacts / f"{script}.tap").write_text(run.output)
    return run


@contextmanager
def store_cors_allows(origin: str) -> Iterator[None]:
    """The test bucket also allows ``origin`` (a page on a free port) while the block runs."""
    s3 = objectstore.client()
    bucket = objectstore.bucket()
    try:
        rules = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    except ClientError:
        rules = []
    s3.put_bucket_cors(
        Bucket=bucket, CORSConfiguration={"CORSRules": [*rules, cors_rule([origin])]}
    )
    try:
        yield
    finally:
        if rules:
            s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": rules})
        else:
            s3.delete_bucket_cors(Bucket=bucket)


@pytest.fixture
def example(api_base: str, api_key: str) -> Iterator[str]:
    """The example's server, holding the key; its page's origin is allowed by the store."""
    port = free_port()
    origin = f"http://localhost:{port}"
    process = subprocess.Popen(
        [node(), str(EXAMPLE)],
        cwd=ROOT,
        env={
            **os.environ,
            "STORAGE_API_KEY": api_key,
            "STORAGE_BASE_URL": api_base,
            "PORT": str(port),
            "HOST": "127.0.0.1",
        },
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if requests.get(f"{origin}/", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the example's server did not start")
            time.sleep(0.1)
        with store_cors_allows(origin):
            yield origin
    finally:
        process.terminate()
        process.wait(timeout=10)
