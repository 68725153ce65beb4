"""The TypeScript client's Node tests (clients/js/test, ``node --test``: each one step of a
file's, a webhook's or a delivery URL's life) against the real stack, under the machine's
Node and under Node 18 (a real binary, tests/js/node18), the oldest the package claims."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.factories import Actor
from tests.js.conftest import JS, NodeRun, node, node18, run_node


def version(binary: str, *args: str) -> str:
    return subprocess.run(
        [binary, *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def run_the_suite(binary: str, owner: Actor, api_base: str) -> NodeRun:
    files = sorted(str(path.relative_to(JS)) for path in (JS / "test").glob("*.test.mjs"))
    done = run_node(
        ["--test", "--test-reporter=tap", *files],
        env={"STORAGE_API_KEY": owner.key.raw_key, "STORAGE_BASE_URL": api_base},
        timeout=300,
        binary=binary,
    )
    assert done.returncode == 0, done.output
    assert done.counts.get("fail") == 0, done.output
    assert done.counts.get("skipped", 0) == 0, done.output
    # Every test file ran (a missing one would pass quietly).
    assert done.counts.get("pass", 0) >= 18, done.output
    return done


@pytest.mark.timeout(300)
def test_the_node_client_drives_the_whole_lifecycle(
    api_base: str, actor: Actor, celery_worker: subprocess.Popen
) -> None:
    run_the_suite(node(), actor, api_base)


# The same suite under the oldest Node the package claims.
@pytest.mark.timeout(300)
def test_the_node_client_drives_the_whole_lifecycle_on_node_18(
    tmp_path: Path, api_base: str, actor: Actor, celery_worker: subprocess.Popen
) -> None:
    oldest = node18()
    assert version(oldest, "--version").startswith("v18."), version(oldest, "--version")
    # What the client works around there: no global Web Crypto (node:crypto's is used) and
    # no global File. A script file, not -e, whose globals include the built-in modules.
    probe = tmp_path / "probe.mjs"
    probe.write_text("console.log([typeof globalThis.crypto, typeof globalThis.File].join())")
    assert version(oldest, str(probe)) == "undefined,undefined"
    run_the_suite(oldest, actor, api_base)
