"""The short failure drill (`python -m drills.cluster --short`, ~30 s of traffic): `make cluster`
on ports of its own loses one volume server and one transform worker mid-job, and every
acknowledged upload, thumbnail and webhook delivery survives, with no API 5xx."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from scripts import devcluster, servers
from tests.servers import ROOT


def free_block(size: int, *, grpc: bool) -> int:
    """A port with ``size`` free ports from it (and each + 10000 when ``grpc``)."""
    for _ in range(200):
        base = random.randrange(20_000, 29_000)
        ports = [base + i for i in range(size)]
        if grpc:
            ports += [port + devcluster.GRPC_OFFSET for port in ports]
        if all(servers.port_is_free(port) for port in ports):
            return base
    raise RuntimeError("no free block of ports")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_short_drill_loses_nothing() -> None:
    env = {
        **os.environ,
        "DRILL_PORT": str(free_block(3, grpc=False)),  # two APIs and the delivery server
        "SEAWEEDFS_S3_PORT": str(free_block(len(devcluster.cluster_ports(0)), grpc=True)),
    }
    # The cluster runs as deployed, not with the suite's settings.
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("AWS_S3_ENDPOINT_URL", None)
    result = subprocess.run(
        [sys.executable, "-m", "drills.cluster", "--short"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    output = result.stdout + result.stderr[-5000:]
    assert result.returncode == 0, output
    assert "RESULT: zero loss" in result.stdout, output
    assert "API 5xx responses: 0 " in result.stdout, output
    assert "SIGKILL volume server 2 of 3" in result.stdout, output
    assert "SIGKILL transform worker mid-job" in result.stdout, output
    assert "made on attempt 2)" in result.stdout, output  # the killed job was run again
