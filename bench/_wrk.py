"""wrk as the throughput benches drive it: one load (an endpoint, its headers, its Lua
script) for some seconds, parsed into requests, errors, timeouts and latency percentiles; a
round of such measures, and the ratios between them (figures of the SAME round)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

THREADS = 2
CONNECTIONS = 16


@dataclass
class Load:
    label: str
    server: str  # "api", "ref" or "peer"
    path: str
    expect_body: bool = False  # a POST with a JSON body (upload) or an empty one (complete)
    script: str | None = None
    accept: str = "application/json"  # what a client of the API sends


@dataclass
class Measure:
    requests: int = 0
    errors: int = 0
    timeouts: int = 0
    seconds: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    other_cores: float = 0.0
    # CPU milliseconds per answered request, of the API server (all its processes) and of
    # PostgreSQL: where a request's cost lands when the cores, not the waits, set the pace.
    server_ms: float = 0.0
    postgres_ms: float = 0.0

    @property
    def rps(self) -> float:
        return (self.requests - self.errors) / self.seconds if self.seconds else 0.0


@dataclass
class Round:
    measures: dict[str, Measure] = field(default_factory=dict)

    def ratio(self, label: str, reference: str) -> float:
        below = self.measures[reference].rps
        return self.measures[label].rps / below if below else 0.0


_DURATION = re.compile(r"(\d+) requests in ([\d.]+)(us|ms|s|m)")
_NON_2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")
_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_PERCENTILE = re.compile(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", re.M)
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}


def parse_wrk(output: str) -> Measure:
    found = _DURATION.search(output)
    if found is None:
        raise SystemExit(f"wrk said:\n{output}")
    measure = Measure(requests=int(found[1]), seconds=float(found[2]) * _UNITS[found[3]])
    if (non_2xx := _NON_2XX.search(output)) is not None:
        measure.errors += int(non_2xx[1])
    if (sockets := _SOCKET.search(output)) is not None:
        # Requests that got no answer within --timeout: failed, and not in the count above.
        measure.timeouts = int(sockets[4])
    for quantile, value, unit in _PERCENTILE.findall(output):
        ms = float(value) * _UNITS[unit] * 1000
        if quantile == "50":
            measure.p50_ms = ms
        else:
            measure.p99_ms = ms
    return measure


def run_wrk(
    url: str, key: str | None, load: Load, seconds: float, script: Path | None, script_arg: int = 0
) -> Measure:
    """One wrk run against ``url`` + ``load.path``; ``key`` None sends no Authorization (a
    URL that carries its own credential: a delivery URL, a signed URL)."""
    cmd = ["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{seconds:g}s", "--latency"]
    cmd += ["--timeout", "30s", "-H", f"Accept: {load.accept}"]
    if key is not None:
        cmd += ["-H", f"Authorization: Bearer {key}"]
    if load.expect_body:
        cmd += ["-H", "Content-Type: application/json"]
    if script is not None:
        cmd += ["-s", str(script)]
    cmd.append(url + load.path)
    if script is not None:
        cmd += ["--", str(script_arg)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=seconds + 60)
    if done.returncode != 0:
        raise SystemExit(f"wrk failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return parse_wrk(done.stdout)
