"""The TypeScript client's delivery URLs (clients/js/test/delivery.test.mjs) against the real
stack, under the machine's Node: offline Web Crypto signatures against the guide's vectors,
the same URLs as the API's, resolved to the bytes. test_node_client.py runs the same file
under Node 18 too, with the rest of the suite."""

from __future__ import annotations

from tests.factories import Actor
from tests.js.conftest import run_node


def test_the_node_client_signs_delivery_urls_the_server_resolves(
    api_base: str, actor: Actor
) -> None:
    run = run_node(
        ["--test", "--test-reporter=tap", "test/delivery.test.mjs"],
        env={"STORAGE_API_KEY": actor.key.raw_key, "STORAGE_BASE_URL": api_base},
        timeout=120,
    )
    assert run.returncode == 0, run.output
    assert run.counts.get("pass") == 2, run.output
    assert run.counts.get("fail") == 0, run.output
