"""The TypeScript client's Node tests (clients/js/test, ``node --test``) against the real
stack; each test there is one step of a file's or a webhook's life. They run under the
machine's Node and under Node 18 (a real binary, tests/js/node18), the oldest the package
claims, at the same time: most of a run is waiting on the server and the worker."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.factories import Actor, make_actor
from tests.js.conftest import JS, NodeRun, node, node18, run_node


def version(binary: str, *args: str) -> str:
    return subprocess.run(
        [binary, *args], capture_output=True, text=True, check=True
    ).stdout.strip()


# Two runs of the whole lifecycle, with the API server's and the worker's start.
@pytest.mark.timeout(300)
def test_the_node_client_drives_the_whole_lifecycle_on_node_18_and_the_current_node(
    tmp_path: Path, api_base: str, actor: Actor, celery_worker: subprocess.Popen
) -> None:
    oldest = node18()
    assert version(oldest, "--version").startswith("v18."), version(oldest, "--version")
    # What the client works around there: no global Web Crypto (node:crypto's is used) and
    # no global File. A script file, not -e, whose globals include the built-in modules.
    probe = tmp_path / "probe.mjs"
    probe.write_text("console.log([typeof globalThis.crypto, typeof globalThis.File].join())")
    assert version(oldest, str(probe)) == "undefined,undefined"

    # A project each: the runs list, count and move what they stored, not each other's.
    other = make_actor("js-owner-node18", organization="acme")
    files = sorted(str(path.relative_to(JS)) for path in (JS / "test").glob("*.test.mjs"))

    def run(binary: str, owner: Actor) -> NodeRun:
        return run_node(
            ["--test", "--test-reporter=tap", *files],
            env={"STORAGE_API_KEY": owner.key.raw_key, "STORAGE_BASE_URL": api_base},
            timeout=300,
            binary=binary,
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {
            "node 18": pool.submit(run, oldest, other),
            f"node {version(node(), '--version')}": pool.submit(run, node(), actor),
        }
        for name, future in runs.items():
            done = future.result()
            assert done.returncode == 0, f"{name}:\n{done.output}"
            assert done.counts.get("fail") == 0, f"{name}:\n{done.output}"
            assert done.counts.get("skipped", 0) == 0, f"{name}:\n{done.output}"
            # Every test file ran (a missing one would pass quietly).
            assert done.counts.get("pass", 0) >= 18, f"{name}:\n{done.output}"
