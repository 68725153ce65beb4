"""schemathesis, as a client developer runs it: its CLI against a live API server, every
phase (examples, coverage, fuzzing, stateful) and every check, on a fixed seed. It must find
nothing: no 500, no answer outside the document, no schema-valid request refused, no
schema-violating request accepted, no created resource missing, no deleted one still there,
nothing of one project readable by another.

``make fuzz`` runs this same test with a random seed and many more examples
(FUZZ_SEED, FUZZ_MAX_EXAMPLES, FUZZ_MAX_STEPS). tests/ops/schemathesis.toml holds the
configuration, and why each narrowed expectation is the contract's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from storage_service.celery import app
from tests.factories import make_actor
from tests.servers import ROOT, serve_api

pytestmark = pytest.mark.django_db(transaction=True)

CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = os.environ.get("FUZZ_SEED", "20261123")
MAX_EXAMPLES = os.environ.get("FUZZ_MAX_EXAMPLES", "8")
# Queues no worker reads: the fuzzer registers webhooks to made-up URLs, which must never be
# called, and its messages are dropped at the end.
FUZZ_QUEUES = ("storage-fuzz", "storage-fuzz-webhooks", "storage-fuzz-transforms")


def _purge(queues: tuple[str, ...]) -> None:
    with app.connection_for_write() as connection:
        channel: Any = connection.default_channel
        for queue in queues:
            channel.queue_purge(queue)


@pytest.mark.timeout(int(os.environ.get("FUZZ_TIMEOUT", "600")))
def test_schemathesis_every_phase_and_check_finds_nothing(tmp_path: Path) -> None:
    owner = make_actor("fuzz-owner", organization="fuzz")
    sibling = make_actor("fuzz-sibling", organization="fuzz")
    auth_file = tmp_path / "auth.json"
    auth_file.write_text(
        json.dumps(
            {
                "auth": [
                    {
                        "name": name,
                        "fixedHeaders": [
                            {"name": "Authorization", "value": f"Bearer {actor.key.raw_key}"}
                        ],
                    }
                    for name, actor in (("owner", owner), ("sibling", sibling))
                ]
            }
        )
    )
    server_env = {
        # Rate limits have their own tests (tests/ops/test_rate_limits.py); here they would
        # only slow the run down.
        "SERVICE_RATE_LIMIT_READS_PER_MINUTE": "0",
        "SERVICE_RATE_LIMIT_WRITES_PER_MINUTE": "0",
        # No worker runs the fuzzer's jobs: without a high cap, its folder operations would
        # soon all be the cap's 429 and test nothing else.
        "SERVICE_JOB_MAX_ACTIVE_PER_PROJECT": "100000",
        # Registration then checks a URL's shape only (no DNS lookup of made-up hosts); the
        # document's URL pattern is then the whole rule.
        "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
        "CELERY_TASK_DEFAULT_QUEUE": FUZZ_QUEUES[0],
        "SERVICE_WEBHOOK_QUEUE": FUZZ_QUEUES[1],
        "SERVICE_TRANSFORM_QUEUE": FUZZ_QUEUES[2],
    }
    try:
        with serve_api(workers=2, **server_env) as base_url:
            run = subprocess.run(
                [
                    str(Path(sys.executable).parent / "schemathesis"),
                    "--config-file",
                    str(CONFIG),
                    "run",
                    f"{base_url}/v1/openapi.json",
                    "--phases",
                    "examples,coverage,fuzzing,stateful",
                    "--checks",
                    "all",
                    "--seed",
                    SEED,
                    "--max-examples",
                    MAX_EXAMPLES,
                    # One worker: hypothesis describes strategies with ast.parse, which
                    # CPython 3.11 cannot run from two threads at once (SystemError).
                    "--workers",
                    "1",
                    "--no-color",
                    "--report",
                    "junit",
                    "--report-dir",
                    str(tmp_path / "report"),
                ],
                cwd=ROOT,
                env={
                    **os.environ,
                    "FUZZ_AUTH_FILE": str(auth_file),
                    "PYTHONPATH": str(ROOT),
                },
                capture_output=True,
                text=True,
                timeout=int(os.environ.get("FUZZ_TIMEOUT", "600")),
            )
    finally:
        _purge(FUZZ_QUEUES)
    output = run.stdout + run.stderr
    sys.stdout.write(output[-6000:])  # shown with -s, and by `make fuzz`
    assert run.returncode == 0, output[-30000:]
    assert "Seed: " + SEED in output
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in output, phase
