"""Requests per second of the API's hot paths beside the server users would pick instead
(Supabase Storage, when its address is given) and two references outside the service, in one
run: a bare Django app and a "lean" authenticated single-file GET (bench/reference/).

    .venv/bin/python -m bench.api_throughput [--rounds 3] [--duration 8] [--warmup 2]
        [--only get|list|upload|mint|complete ...]
        [--peer-url http://127.0.0.1:5000 --peer-key <service key> [--peer-bucket NAME]]

Load: wrk (2 threads, 16 connections; `apt-get install wrk`), black-box over HTTP against
the API served as `make run` serves it (storage_service/serving.py: the same workers and
threads for the API and the references), with the ordinary request a client sends. Every
round measures every endpoint one after the other, each of ours right before the peer's
counterpart; ratios divide by figures measured in the SAME round, and the table shows the
median and range over the rounds. The project is fresh for every run (1,000 seeded files,
plus pending ones for complete, in the bench database) and deleted afterwards; the peer's
bucket gets 100 objects in one folder (created or overwritten, left in place).

``mint`` (``POST /v1/upload-tokens``, an application's server minting a browser's upload
token) is measured right after upload start, which it is held to: minting should cost no
more than the start it stands in for (``--only mint`` measures both).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from bench import _common as bench
from bench._supabase import PEER_FOLDER, PEER_OBJECTS, Peer, Remote
from bench._wrk import CONNECTIONS, THREADS, Load, Round, run_wrk
from bench._wrk import Measure as Measure  # bench.delivery takes it from here

PROJECT_PREFIX = "bench-api-throughput-"
SEED_FILES = 1_000
LIST_PATH = "bench/list"  # a folder of LIST_FILES files: every list answers a full page of 20
LIST_FILES = 100
# Pending files for POST .../complete (each completes once): a block per wrk run, two runs
# (warm-up, measured) per round.
COMPLETE_BLOCK = 10_000
BARE = "bare Django view (own process)"
LEAN = "lean authenticated GET (own process)"
GET = "GET /v1/files/<id>"
LIST = "GET /v1/files?path=…&limit=20"
UPLOAD = "POST /v1/files/upload"
MINT = "POST /v1/upload-tokens"
COMPLETE = "POST /v1/files/<id>/complete"
# The peer's counterpart of each endpoint: Supabase Storage's object info, list of a folder
# (prefix, limit 20) and signed upload URL, with its service key as the Bearer token.
PEER_GET = "peer: GET /object/info/authenticated/<bucket>/<path>"
PEER_LIST = "peer: POST /object/list/<bucket> (prefix, limit 20)"
PEER_UPLOAD = "peer: POST /object/upload/sign/<bucket>/<path>"
PEERS = {GET: PEER_GET, LIST: PEER_LIST, UPLOAD: PEER_UPLOAD}
# (endpoint, reference, share): the shares of the references each endpoint should reach.
GOALS = [(GET, LEAN, 0.8), (LIST, BARE, 0.25), (UPLOAD, BARE, 0.2)]
# (endpoint, ratio): ours divided by the peer's counterpart, measured in the same round.
PEER_GOALS = [(GET, 1.2), (LIST, 1.2), (UPLOAD, 0.5)]
# (endpoint, reference, ratio): ours against ours, measured in the same round.
OWN_GOALS = [(MINT, UPLOAD, 1.0)]

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

# An application's server minting a token for one browser upload into a user's folder, with
# every bound a page would get.
MINT_LUA = """
local body = '{"path":"uploads/user-42","maxFileSizeBytes":10485760,'
  .. '"allowedContentTypes":["image/*"],"maxFiles":1,"expiresInSeconds":900,'
  .. '"allowedOrigins":["https://app.example"]}'
function request() return wrk.format("POST", "/v1/upload-tokens", nil, body) end
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

PEER_LIST_LUA = """
local body = '{"prefix":"%(prefix)s","limit":20}'
function request() return wrk.format("POST", nil, nil, body) end
"""

# A new object name per request (as our upload's filename), under a name unique to the run.
PEER_UPLOAD_LUA = """
local counter, threads = 0, 0
function setup(thread) thread:set("tid", threads); threads = threads + 1 end
function request()
  counter = counter + 1
  return wrk.format("POST", string.format(
    "/object/upload/sign/%(bucket)s/bench/upload/%(run)s-%%d-%%d.png", tid, counter))
end
"""


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
        choices=["get", "list", "upload", "mint", "complete"],
        action="append",
        help="measure only these endpoints (with both references and the peer; mint with "
        "upload start, its reference); repeatable",
    )
    parser.add_argument(
        "--peer-url", help="Supabase Storage's address, e.g. http://127.0.0.1:5000 (optional)"
    )
    parser.add_argument("--peer-key", help="the peer's service key (a service_role JWT)")
    parser.add_argument(
        "--peer-bucket",
        default="bench-api-throughput",
        help="the peer's bucket to seed and measure (created if missing)",
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (Debian/Ubuntu)")
    if bool(args.peer_url) != bool(args.peer_key):
        raise SystemExit("--peer-url and --peer-key go together")
    peer = (
        Peer(args.peer_url.rstrip("/"), args.peer_key, args.peer_bucket) if args.peer_url else None
    )

    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)
    from django.conf import settings

    from accounts.services import api_key_issue
    from files.models import File

    peer_path = ""
    if peer is not None:
        bench.log(f"seeding the peer at {peer.url}: {PEER_OBJECTS} objects in {PEER_FOLDER}")
        peer_path = peer.seed()
        peer.check(peer_path)

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
        mint_lua = workdir / "mint.lua"
        mint_lua.write_text(MINT_LUA)
        complete_lua = workdir / "complete.lua"
        complete_lua.write_text(COMPLETE_LUA % {"ids": ids, "threads": THREADS})
        ours = [
            Load(GET, "api", f"/v1/files/{file_id}"),
            Load(LIST, "api", f"/v1/files?path={LIST_PATH}&limit=20"),
            Load(UPLOAD, "api", "/v1/files/upload", True, str(upload_lua)),
            Load(MINT, "api", "/v1/upload-tokens", True, str(mint_lua)),
            Load(COMPLETE, "api", "/v1/files/<id>/complete", True, str(complete_lua)),
        ]
        if args.only:
            chosen = {
                "get": GET,
                "list": LIST,
                "upload": UPLOAD,
                "mint": MINT,
                "complete": COMPLETE,
            }
            wanted = {chosen[name] for name in args.only}
            if MINT in wanted:
                wanted.add(UPLOAD)  # the reference of mint's goal, in the same rounds
            ours = [load for load in ours if load.label in wanted]
        peer_loads: dict[str, Load] = {}
        if peer is not None:
            peer_list_lua = workdir / "peer-list.lua"
            peer_list_lua.write_text(PEER_LIST_LUA % {"prefix": PEER_FOLDER})
            peer_upload_lua = workdir / "peer-upload.lua"
            run = uuid.uuid4().hex[:12]  # object names no earlier run signed
            peer_upload_lua.write_text(PEER_UPLOAD_LUA % {"bucket": peer.bucket, "run": run})
            peer_loads = {
                GET: Load(PEER_GET, "peer", peer.info_path(peer_path)),
                LIST: Load(
                    PEER_LIST, "peer", f"/object/list/{peer.bucket}", True, str(peer_list_lua)
                ),
                UPLOAD: Load(
                    PEER_UPLOAD, "peer", "/object/upload/sign", False, str(peer_upload_lua)
                ),
            }
        loads = [Load(BARE, "ref", "/bare"), Load(LEAN, "ref", f"/lean/files/{file_id}")]
        for load in ours:
            loads.append(load)
            if load.label in peer_loads:
                loads.append(peer_loads[load.label])
        with (
            bench.api_server(url) as api,
            bench.api_server(
                url,
                app="reference.wsgi:application",
                settings_module="reference.settings",
                ready_path="/bare",
            ) as ref,
        ):
            servers: dict[str, Any] = {"api": api, "ref": ref}
            keys = {"api": raw_key, "ref": raw_key}
            if peer is not None:
                address = urllib.parse.urlsplit(peer.url)
                local = address.hostname in ("127.0.0.1", "localhost")
                peer.pid = bench.listener_pid(address.port or 80) if local else None
                servers["peer"] = Remote(peer.url, peer.pid)
                keys["peer"] = peer.key
            next_block = 0  # the first pending id of the next complete run
            for number in range(1, args.rounds + 1):
                this = Round()
                for load in loads:
                    server, key = servers[load.server], keys[load.server]
                    script = Path(load.script) if load.script else None
                    bench.log(f"round {number}: {load.label}")
                    # Each complete run gets its own block of pending ids (wrk's threads take
                    # every THREADS-th id of it, not necessarily as many each).
                    run_wrk(server.base_url, key, load, args.warmup, script, next_block)
                    next_block += COMPLETE_BLOCK if load.label == COMPLETE else 0
                    before = server.cpu()
                    measure = run_wrk(server.base_url, key, load, args.duration, script, next_block)
                    next_block += COMPLETE_BLOCK if load.label == COMPLETE else 0
                    used = server.cpu() - before
                    # wrk's own CPU is not counted here: 'other' includes it (and the peer's).
                    measure.other_cores = (
                        max(0.0, used.machine - used.server - used.postgres) / measure.seconds
                    )
                    served = max(1, measure.requests - measure.errors)
                    measure.server_ms = used.server * 1000 / served
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

    loads_by_label = {load.label: load for load in loads}
    report(
        rounds,
        loads_by_label,
        peer,
        (api_line, ref_line),
        bool(settings.DEBUG),
        args,
    )
    return 0


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def median_ratio(rounds: list[Round], label: str, reference: str) -> float:
    return statistics.median(r.ratio(label, reference) for r in rounds)


def report(
    rounds: list[Round],
    loads: dict[str, Load],
    peer: Peer | None,
    lines: tuple[str, str],
    debug: bool,
    args: argparse.Namespace,
) -> None:
    api_line, ref_line = lines
    print()
    print(
        f"wrk -t{THREADS} -c{CONNECTIONS}, {args.duration:g} s per endpoint after "
        f"{args.warmup:g} s of warm-up, {len(rounds)} rounds; median (min-max) over rounds"
    )
    print(f"API:        {api_line}")
    print(f"references: {ref_line}")
    print(f"DEBUG={debug} in both (the dev settings; SERVICE_DEBUG=true for DEBUG on)")
    if peer is None:
        print("peer:       not measured (no --peer-url/--peer-key given)")
    else:
        print(
            f"peer:       Supabase Storage at {peer.url}, bucket {peer.bucket} "
            f"({PEER_OBJECTS} objects in {PEER_FOLDER}), its service key; "
            + (f"process {peer.pid}" if peer.pid is not None else "its process not found here")
        )
    print()
    rows = []
    for label, load in loads.items():
        measures = [r.measures[label] for r in rounds]
        rows.append(
            [
                label,
                spread([m.rps for m in measures], ",.0f"),
                spread([r.ratio(label, BARE) for r in rounds], ".2f"),
                spread([r.ratio(label, LEAN) for r in rounds], ".2f")
                if label in (LEAN, GET)
                else "",
                f"{statistics.median(m.p50_ms for m in measures):.1f}",
                f"{statistics.median(m.p99_ms for m in measures):.1f}",
                f"{statistics.median(m.server_ms for m in measures):.2f}"
                if load.server != "peer" or (peer is not None and peer.pid is not None)
                else "-",
                f"{statistics.median(m.postgres_ms for m in measures):.2f}",
                str(sum(m.errors + m.timeouts for m in measures)),
                f"{max(m.other_cores for m in measures):.2f}",
            ]
        )
    headers = ["endpoint", "req/s", "share of bare", "share of lean", "p50 ms", "p99 ms"]
    headers += ["server CPU ms/req", "postgres CPU ms/req", "errors", "other cores"]
    print(bench.table(headers, rows))
    print(
        "\nShares divide by the reference measured in the same round. 'errors': non-2xx answers"
        " and timeouts (excluded from req/s). 'other cores': the most, over the rounds, that"
        " wrk and every other process of the machine used beside the server and PostgreSQL."
        " 'server CPU ms/req': CPU time of the API server's processes (main and workers) or, on the"
        " peer's rows, of the peer's process; 'postgres CPU ms/req': of every PostgreSQL"
        " process; per answered request (medians over the rounds)."
    )

    ours = [label for label in (GET, LIST, UPLOAD) if label in loads]
    if peer is not None:
        print("\nAgainst the peer (each ratio divides figures of the same round):")
        peer_rows = []
        for label in ours:
            peer_rows.append(
                [
                    label,
                    spread([r.measures[label].rps for r in rounds], ",.0f"),
                    spread([r.measures[PEERS[label]].rps for r in rounds], ",.0f"),
                    spread([r.ratio(label, PEERS[label]) for r in rounds], ".2f"),
                ]
            )
        print(bench.table(["endpoint", "ours req/s", "peer req/s", "ours/peer"], peer_rows))

    own = [(label, reference, goal) for label, reference, goal in OWN_GOALS if label in loads]
    if own:
        print("\nAgainst our own endpoints (same round):")
        print(
            bench.table(
                ["endpoint", "req/s", "reference", "reference req/s", "ratio"],
                [
                    [
                        label,
                        spread([r.measures[label].rps for r in rounds], ",.0f"),
                        reference,
                        spread([r.measures[reference].rps for r in rounds], ",.0f"),
                        spread([r.ratio(label, reference) for r in rounds], ".2f"),
                    ]
                    for label, reference, _ in own
                ],
                left=(0, 2),
            )
        )

    print("\nGoals (on the median ratio):")
    if peer is None:
        print("  against the peer: not measured (give --peer-url and --peer-key)")
    for label, goal in PEER_GOALS if peer is not None else []:
        if label not in loads:
            continue
        ratio = median_ratio(rounds, label, PEERS[label])
        verdict = "PASS" if ratio >= goal else "FAIL"
        print(f"  [{verdict}] {label} at least {goal:.2f}x the peer: {ratio:.2f}")
    for label, reference, goal in own:
        ratio = median_ratio(rounds, label, reference)
        verdict = "PASS" if ratio >= goal else "FAIL"
        print(f"  [{verdict}] {label} at least {goal:.2f}x {reference}: {ratio:.2f}")
    for label, reference, share in GOALS:
        if label not in loads:
            continue
        ratio = median_ratio(rounds, label, reference)
        verdict = "PASS" if ratio >= share else "FAIL"
        name = "bare" if reference == BARE else "lean"
        print(f"  [{verdict}] {label} at least {share:.2f} of {name}: {ratio:.2f}")


if __name__ == "__main__":
    sys.exit(main())
