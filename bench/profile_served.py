"""Where a served request's CPU goes: wrk loads one endpoint of the API as `make run` serves it
(storage_service/serving.py) while py-spy samples every worker, counting only samples
that hold the GIL (Python running, not waiting on PostgreSQL or Redis).

    .venv/bin/python -m bench.profile_served [--endpoint get|list|upload] [--seconds 15]
        [--depth 6] [--root 'FileViewSet.retrieve']

Prints requests per second, CPU milliseconds per request of the API server and PostgreSQL, and the
call tree under ``--root`` (a frame name prefix), each line the share of all GIL samples of
the workers. In-process profiles (bench/profile_get.py) miss what only serving costs:
the server's hand-over to Python, the middleware, and the caches of workers sharing two cores
with PostgreSQL and wrk. The default root, granian's ``_runner``, is where each request
enters Python. py-spy comes with `make bench` (bench/requirements.txt).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import _common as bench
from bench import api_throughput as throughput


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", choices=["get", "list", "upload"], default="list")
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--depth", type=int, default=6, help="levels of the tree shown")
    parser.add_argument("--root", default="_runner", help="frame to start at")
    parser.add_argument("--min-share", type=float, default=0.5, help="hide lines below (%%)")
    args = parser.parse_args()
    for tool in ("wrk", "py-spy"):
        if shutil.which(tool) is None:
            raise SystemExit(
                f"{tool} is not installed (wrk: apt-get install wrk; py-spy: make bench)"
            )

    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)
    from accounts.services import api_key_issue
    from files.models import File

    project = throughput.fresh_project(url)
    workdir = Path(tempfile.mkdtemp(prefix="bench-spy-"))
    try:
        raw_key = api_key_issue(project=project, environment="test", name="bench").raw_key
        file_id = (
            File.objects.filter(project=project, status="uploaded", metadata__isnull=False)
            .values_list("id", flat=True)
            .first()
        )
        script = workdir / "upload.lua"
        script.write_text(throughput.UPLOAD_LUA)
        loads = {
            "get": throughput.Load("get", "api", f"/v1/files/{file_id}"),
            "list": throughput.Load(
                "list", "api", f"/v1/files?path={throughput.LIST_PATH}&limit=20"
            ),
            "upload": throughput.Load("upload", "api", "/v1/files/upload", True, str(script)),
        }
        load = loads[args.endpoint]
        lua = Path(load.script) if load.script else None
        with bench.api_server(url) as api:
            throughput.run_wrk(api.base_url, raw_key, load, 3, lua)  # warm every worker
            workers = subprocess.run(
                ["pgrep", "-P", str(api.proc.pid)], capture_output=True, text=True, check=False
            ).stdout.split()
            command = ["py-spy", "record", "--rate", "250", "--nonblocking", "--gil"]
            command += ["--duration", str(args.seconds), "--format", "raw"]
            spies = [
                subprocess.Popen(
                    [*command, "--pid", pid, "--output", str(workdir / f"{pid}.txt")],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for pid in workers
            ]
            before = api.cpu()
            measure = throughput.run_wrk(api.base_url, raw_key, load, args.seconds, lua)
            used = api.cpu() - before
            for spy in spies:
                spy.wait()
        served = max(1, measure.requests - measure.errors)
        print(
            f"\n{args.endpoint}: {measure.rps:,.0f} req/s under py-spy (slower than unprofiled),"
            f" server {used.server * 1000 / served:.2f} ms CPU/req,"
            f" postgres {used.postgres * 1000 / served:.2f} ms CPU/req\n"
        )
        print(f"Share of the workers' GIL samples, under {args.root!r}:")
        for line in tree(sorted(workdir.glob("*.txt")), args.root, args.depth, args.min_share):
            print(line)
    finally:
        bench.delete_project(url, project.id)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def names(frame: str, root: str) -> bool:
    """Whether py-spy's frame ``qualname (file:line)`` is ``root``, by its name or qualname's tail
    (granian's ``_runner`` is ``_callback_wrapper.<locals>._runner``)."""
    name = frame.split(" (", 1)[0]
    return name.startswith(root) or name.rpartition(".")[2].startswith(root)


def tree(files: list[Path], root: str, depth: int, min_share: float) -> list[str]:
    """py-spy's collapsed stacks (``frame;frame;... count``) as an indented tree of shares."""
    total = 0
    paths: collections.Counter[tuple[str, ...]] = collections.Counter()
    for file in files:
        for line in file.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            samples = int(count)
            total += samples
            frames = stack.split(";")
            starts = [i for i, frame in enumerate(frames) if names(frame, root)]
            if not starts:
                continue
            below = tuple(frames[starts[0] : starts[0] + depth + 1])
            for end in range(1, len(below) + 1):
                paths[below[:end]] += samples
    lines = []
    for frames_to, samples in sorted(paths.items()):
        share = 100 * samples / max(1, total)
        if share >= min_share:
            lines.append(f"{share:5.1f}% {'  ' * (len(frames_to) - 1)}{frames_to[-1][:110]}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
