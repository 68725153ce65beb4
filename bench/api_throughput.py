"""Requests per second of the API's hot paths beside two references outside the service, in
one run: a bare Django app and a "lean" authenticated single-file GET (bench/reference/).

    .venv/bin/python bench/api_throughput.py [--rounds 3] [--duration 8] [--warmup 2]

Load: wrk (2 threads, 16 connections; `apt-get install wrk`), black-box over HTTP against
gunicorn as `make run` serves the API (./gunicorn.conf.py: the same workers, class and
threads for all three). Every round measures all six endpoints one after the other; each
endpoint's ratios divide by the references measured in the SAME round, and the table shows
the median and range over the rounds. The project is fresh for every run (1,000 seeded files,
plus pending ones for complete, in the bench database) and deleted afterwards.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as bench

PROJECT_PREFIX = "bench-api-throughput-"
SEED_FILES = 1_000
LIST_PATH = "bench/list"  # a folder of LIST_FILES files: every list answers a full page of 20
LIST_FILES = 100
# Pending files for POST .../complete (each completes once): a block per wrk run, two runs
# (warm-up, measured) per round.
COMPLETE_BLOCK = 10_000
THREADS = 2
CONNECTIONS = 16
BARE = "bare Django view (own process)"
LEAN = "lean authenticated GET (own process)"
GET = "GET /v1/files/<id>"
LIST = "GET /v1/files?path=…&limit=20"
UPLOAD = "POST /v1/files/upload"
COMPLETE = "POST /v1/files/<id>/complete"
# (endpoint, reference, share): the goals of issue 14.
GOALS = [(GET, LEAN, 0.8), (LIST, BARE, 0.25), (UPLOAD, BARE, 0.2)]

UPLOAD_LUA = """
local counter, threads = 0, 0
function setup(thread) thread:set("tid", threads); threads = threads + 1 end
function request()
  counter = counter + 1
  local body = string.format(
    '{"filename":"wrk-%d-%d.png","contentType":"image/png","size":1024}', tid, counter)
  return wrk.format("POST", "/v1/files/upload", nil, body)
end
"""

COMPLETE_LUA = """
local ids, threads, at = {}, 0, 0  -- tid: a global, set per thread by setup()
for line in io.lines("%(ids)s") do ids[#ids + 1] = line end
function setup(thread) thread:set("tid", threads); threads = threads + 1 end
-- wrk's argument: the first id of this run's block (each file completes only once).
function init(args) at = tonumber(args[1] or "0") + tid end
function request()
  local id = ids[at + 1] or "file_exhausted"
  at = at + %(threads)d
  return wrk.format("POST", "/v1/files/" .. id .. "/complete", nil, "")
end
"""


@dataclass
class Load:
    label: str
    server: str  # "api" or "ref"
    path: str
    expect_body: bool = False  # a POST with a JSON body (upload) or an empty one (complete)
    script: str | None = None


@dataclass
class Measure:
    requests: int = 0
    errors: int = 0
    timeouts: int = 0
    seconds: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    other_cores: float = 0.0
    # CPU milliseconds per answered request, of gunicorn (master and workers) and of
    # PostgreSQL: where a request's cost lands when the cores, not the waits, set the pace.
    gunicorn_ms: float = 0.0
    postgres_ms: float = 0.0

    @property
    def rps(self) -> float:
        return (self.requests - self.errors) / self.seconds if self.seconds else 0.0


@dataclass
class Round:
    measures: dict[str, Measure] = field(default_factory=dict)

    def ratio(self, label: str, reference: str) -> float:
        return self.measures[label].rps / self.measures[reference].rps


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
        # (Read errors are gunicorn's sync workers closing a kept-alive connection.)
        measure.timeouts = int(sockets[4])
    for quantile, value, unit in _PERCENTILE.findall(output):
        ms = float(value) * _UNITS[unit] * 1000
        if quantile == "50":
            measure.p50_ms = ms
        else:
            measure.p99_ms = ms
    return measure


def run_wrk(
    url: str, key: str, load: Load, seconds: float, script: Path | None, script_arg: int = 0
) -> Measure:
    cmd = [
        "wrk",
        f"-t{THREADS}",
        f"-c{CONNECTIONS}",
        f"-d{seconds:g}s",
        "--latency",
        "--timeout",
        "30s",
        "-H",
        f"Authorization: Bearer {key}",
        "-H",
        "Accept: application/json",
    ]
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


# --- Setup ----------------------------------------------------------------------------------


def fresh_project(url: str) -> Any:
    """A new project with SEED_FILES files, after removing those of earlier (crashed) runs."""
    project = bench.fresh_project(url, prefix=PROJECT_PREFIX, rows=SEED_FILES)
    with bench.connect(url) as conn:
        conn.execute(
            "UPDATE files_file SET path = %s WHERE id IN (SELECT id FROM files_file"
            " WHERE project_id = %s AND status = 'uploaded' ORDER BY id LIMIT %s)",
            (LIST_PATH, project.id, LIST_FILES),
        )
    return project


def seed_pending(url: str, project_id: str, count: int) -> list[str]:
    """``count`` pending files whose bytes are in the store: all of them point at one
    stored object (1,024 bytes, application/octet-stream, PUT here), so each complete does the
    whole of its work (lock, HEAD, read the first bytes, publish, event) without a PUT each."""
    from files.models import StoredObject
    from storage_service import objectstore

    stored = StoredObject.objects.create(
        storage_key=f"{project_id}/bench-complete-object",
        project_id=project_id,
        mode="test",  # the bench's key is a test key
        state=StoredObject.State.PENDING,
        declared_type="application/octet-stream",
        declared_size=1024,
    )
    objectstore.client().put_object(
        Bucket=objectstore.bucket(), Key=stored.storage_key, Body=bytes(1024)
    )
    file_id = bench.file_id_sql(
        "floor(extract(epoch FROM now()) * 1000)::bigint",
        "floor(random() * 1125899906842624)::bigint",
        "n",
    )
    with bench.connect(url) as conn:
        rows = conn.execute(
            f"""
            INSERT INTO files_file (
                id, project_id, mode, filename, path, content_type, size, status, version,
                metadata, checksum, sniffed_type, current_object_id, replacement_object_id,
                created_at, updated_at, uploaded_at, deleted_at, status_before_delete, purged_at
            )
            SELECT {file_id}, %(project)s, 'test', 'complete-' || n || '.bin', 'bench/complete',
                'application/octet-stream', 1024, 'pending', 1, NULL, NULL, NULL,
                %(object)s, NULL, now(), now(), NULL, NULL, '', NULL
            FROM generate_series(1::bigint, %(rows)s::bigint) AS n
            RETURNING id
            """,
            {"project": project_id, "object": stored.pk, "rows": count},
        ).fetchall()
    return [row[0] for row in rows]


def remove_complete_object(project_id: str) -> None:
    from storage_service import objectstore

    objectstore.delete([f"{project_id}/bench-complete-object"])


# --- Run --------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first")
    parser.add_argument(
        "--only",
        choices=["get", "list", "upload", "complete"],
        action="append",
        help="measure only these endpoints (and both references); repeatable",
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (Debian/Ubuntu)")

    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)
    from django.conf import settings

    from accounts.services import api_key_issue
    from files.models import File

    project = fresh_project(url)
    workdir = Path(tempfile.mkdtemp(prefix="bench-wrk-"))
    rounds: list[Round] = []
    try:
        raw_key = api_key_issue(project=project, environment="test", name="bench").raw_key
        file_id = (
            File.objects.filter(
                project=project, mode="test", status="uploaded", metadata__isnull=False
            )
            .values_list("id", flat=True)
            .first()
        )
        ids = workdir / "complete-ids.txt"
        ids.write_text(
            "\n".join(seed_pending(url, project.id, 2 * args.rounds * COMPLETE_BLOCK)) + "\n"
        )
        upload_lua = workdir / "upload.lua"
        upload_lua.write_text(UPLOAD_LUA)
        complete_lua = workdir / "complete.lua"
        complete_lua.write_text(COMPLETE_LUA % {"ids": ids, "threads": THREADS})
        loads = [
            Load(BARE, "ref", "/bare"),
            Load(LEAN, "ref", f"/lean/files/{file_id}"),
            Load(GET, "api", f"/v1/files/{file_id}"),
            Load(LIST, "api", f"/v1/files?path={LIST_PATH}&limit=20"),
            Load(UPLOAD, "api", "/v1/files/upload", True, str(upload_lua)),
            Load(COMPLETE, "api", "/v1/files/<id>/complete", True, str(complete_lua)),
        ]
        if args.only:
            chosen = {"get": GET, "list": LIST, "upload": UPLOAD, "complete": COMPLETE}
            wanted = {BARE, LEAN} | {chosen[name] for name in args.only}
            loads = [load for load in loads if load.label in wanted]
        with (
            bench.gunicorn(url) as api,
            bench.gunicorn(
                url,
                app="reference.wsgi:application",
                settings_module="reference.settings",
                ready_path="/bare",
            ) as ref,
        ):
            servers = {"api": api, "ref": ref}
            next_block = 0  # the first pending id of the next complete run
            for number in range(1, args.rounds + 1):
                this = Round()
                for load in loads:
                    server = servers[load.server]
                    script = Path(load.script) if load.script else None
                    bench.log(f"round {number}: {load.label}")
                    # Each complete run gets its own block of pending ids (wrk's threads take
                    # every THREADS-th id of it, not necessarily as many each).
                    run_wrk(server.base_url, raw_key, load, args.warmup, script, next_block)
                    next_block += COMPLETE_BLOCK if load.label == COMPLETE else 0
                    before = server.cpu()
                    measure = run_wrk(
                        server.base_url, raw_key, load, args.duration, script, next_block
                    )
                    next_block += COMPLETE_BLOCK if load.label == COMPLETE else 0
                    used = server.cpu() - before
                    # wrk's own CPU is not counted here: 'other' includes it.
                    measure.other_cores = (
                        max(0.0, used.machine - used.gunicorn - used.postgres) / measure.seconds
                    )
                    served = max(1, measure.requests - measure.errors)
                    measure.gunicorn_ms = used.gunicorn * 1000 / served
                    # A PostgreSQL process that exits between the samples takes its CPU time
                    # with it: never below zero.
                    measure.postgres_ms = max(0.0, used.postgres) * 1000 / served
                    this.measures[load.label] = measure
                rounds.append(this)
            api_line, ref_line = api.describe(), ref.describe()
    finally:
        remove_complete_object(project.id)
        bench.delete_project(url, project.id)
        shutil.rmtree(workdir, ignore_errors=True)

    report(rounds, [load.label for load in loads], api_line, ref_line, bool(settings.DEBUG), args)
    return 0


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def report(
    rounds: list[Round],
    labels: list[str],
    api_line: str,
    ref_line: str,
    debug: bool,
    args: argparse.Namespace,
) -> None:
    print()
    print(
        f"wrk -t{THREADS} -c{CONNECTIONS}, {args.duration:g} s per endpoint after "
        f"{args.warmup:g} s of warm-up, {len(rounds)} rounds; median (min-max) over rounds"
    )
    print(f"API:        {api_line}")
    print(f"references: {ref_line}")
    print(f"DEBUG={debug} in both (the dev settings, as `make run`)")
    print()
    rows = []
    for label in labels:
        measures = [r.measures[label] for r in rounds]
        rows.append(
            [
                label,
                spread([m.rps for m in measures], ",.0f"),
                spread([r.ratio(label, BARE) for r in rounds], ".2f"),
                spread([r.ratio(label, LEAN) for r in rounds], ".2f")
                if label not in (BARE, UPLOAD, COMPLETE, LIST)
                else "",
                f"{statistics.median(m.p50_ms for m in measures):.1f}",
                f"{statistics.median(m.p99_ms for m in measures):.1f}",
                f"{statistics.median(m.gunicorn_ms for m in measures):.2f}",
                f"{statistics.median(m.postgres_ms for m in measures):.2f}",
                str(sum(m.errors + m.timeouts for m in measures)),
                f"{max(m.other_cores for m in measures):.2f}",
            ]
        )
    headers = ["endpoint", "req/s", "share of bare", "share of lean", "p50 ms", "p99 ms"]
    headers += ["gunicorn CPU ms/req", "postgres CPU ms/req", "errors", "other cores"]
    print(bench.table(headers, rows))
    print(
        "\nShares divide by the reference measured in the same round. 'errors': non-2xx answers"
        " and timeouts (excluded from req/s). 'other cores': the most, over the rounds, that"
        " wrk and every other process of the machine used beside gunicorn and PostgreSQL."
        " 'CPU ms/req': CPU time of gunicorn's processes and of PostgreSQL's, per answered"
        " request (medians over the rounds)."
    )
    print("\nGoals (on the median share):")
    for label, reference, share in GOALS:
        if label not in labels:
            continue
        ratio = statistics.median(r.ratio(label, reference) for r in rounds)
        verdict = "PASS" if ratio >= share else "FAIL"
        name = "bare" if reference == BARE else "lean"
        print(f"  [{verdict}] {label} at least {share:.2f} of {name}: {ratio:.2f}")


if __name__ == "__main__":
    sys.exit(main())
