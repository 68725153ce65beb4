"""The short database drill (`python -m drills.database --short`): the primary PostgreSQL of a
pg_auto_failover formation is killed under load, then its successor's standby; no 500, every
503 with Retry-After, the service answers again within 30 s, and nothing acknowledged is lost."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys

import pytest

from scripts import pgcluster, servers
from tests.servers import ROOT


def free_block(size: int) -> int:
    for _ in range(200):
        base = random.randrange(40_000, 49_000)
        if all(servers.port_is_free(base + i) for i in range(size)):
            return base
    raise RuntimeError("no free block of ports")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_short_database_drill_loses_nothing() -> None:
    if not pgcluster.installed():
        pytest.fail("pg_autoctl is not installed: `make test-slow` installs it (apt-get)")
    env = {**os.environ, "CLUSTER_PG_PORT": str(free_block(3))}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    run = subprocess.run(
        [sys.executable, "-m", "drills.database", "--short"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    report = "\n".join(line for line in run.stdout.splitlines() if line.startswith("drill-db"))
    assert run.returncode == 0, report + run.stderr[-4000:]
    assert "drill-db | lost: 0" in report, report
    assert "other 5xx: 0" in report and "503 without Retry-After: 0" in report, report
    again = re.search(r"answered again ([\d.]+) s after the kill", report)
    assert again is not None and float(again.group(1)) < 30, report
    assert "0 missing" in report, report
    assert re.search(r"succeeded, files_done (\d+) of \1;", report), report
