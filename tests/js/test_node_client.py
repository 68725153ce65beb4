"""The TypeScript client's Node tests (clients/js/test, ``node --test``) against the real
stack; each test there is one step of a file's or a webhook's life."""

from __future__ import annotations

import subprocess

from tests.factories import Actor
from tests.js.conftest import JS, run_node


def test_the_node_client_drives_the_whole_lifecycle(
    api_base: str, actor: Actor, celery_worker: subprocess.Popen
) -> None:
    files = sorted(str(path.relative_to(JS)) for path in (JS / "test").glob("*.test.mjs"))
    run = run_node(
        ["--test", "--test-reporter=tap", *files],
        env={"STORAGE_API_KEY": actor.key.raw_key, "STORAGE_BASE_URL": api_base},
        timeout=300,
    )
    assert run.returncode == 0, run.output
    assert run.counts.get("fail") == 0, run.output
    assert run.counts.get("skipped", 0) == 0, run.output
    # Every test file ran (a missing one would pass quietly).
    assert run.counts.get("pass", 0) >= 19, run.output
