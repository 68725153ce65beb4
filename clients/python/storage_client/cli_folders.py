"""``storage`` subcommands on whole folders (mv-folder, rm-folder, restore-folder), which
run as jobs, and ``job`` to follow one."""

from __future__ import annotations

import argparse
from functools import partial
from typing import Callable

from storage_client.cli_output import PROG, Bar, emit
from storage_client.cli_parser import Commands
from storage_client.client import Client
from storage_client.models import Job


def run_folder_job(args: argparse.Namespace, label: str, start: Callable[..., Job]) -> int:
    """Start a folder job and, unless --no-wait, follow it with a progress bar until it
    ends."""
    if args.no_wait:
        job = start(wait=False)
    else:
        bar = Bar(label, None, unit="files")
        try:
            job = start(wait=True, timeout=args.timeout, progress=bar)
        finally:
            bar.close()
    if job.done:
        line = f"{job.status}: {job.files_done} file(s) ({job.id})"
    else:
        line = f"started {job.id} (follow it with: {PROG} job {job.id})"
    return emit(args, job.raw, line)


def cmd_mv_folder(client: Client, args: argparse.Namespace) -> int:
    target = args.to.strip("/") or None
    label = f"{args.source} -> {target or '/'}"
    return run_folder_job(args, label, partial(client.folders.move, args.source, target))


def cmd_rm_folder(client: Client, args: argparse.Namespace) -> int:
    return run_folder_job(args, f"delete {args.path}", partial(client.folders.delete, args.path))


def cmd_restore_folder(client: Client, args: argparse.Namespace) -> int:
    start = partial(client.folders.restore, args.path)
    return run_folder_job(args, f"restore {args.path}", start)


def cmd_job(client: Client, args: argparse.Namespace) -> int:
    job = client.jobs.get(args.id)
    total = "?" if job.files_total is None else str(job.files_total)
    lines = [f"{job.id}  {job.type}  {job.status}  {job.files_done}/{total} files"]
    if job.error:
        lines.append(f"error: {job.error.get('code')}: {job.error.get('message')}")
    return emit(args, job.raw, *lines)


def add_folder_commands(commands: Commands) -> None:
    folder_commands = (
        ("mv-folder", cmd_mv_folder, "move or rename a folder: every file under FROM to TO"),
        ("rm-folder", cmd_rm_folder, "delete every file of a folder (restorable)"),
        ("restore-folder", cmd_restore_folder, "restore every deleted file of a folder"),
    )
    for name, handler, text in folder_commands:
        sub = commands.add(name, handler, text)
        if name == "mv-folder":
            sub.add_argument("source", metavar="FROM")
            sub.add_argument("to", metavar="TO", help="'/' is the root")
        else:
            sub.add_argument("path", metavar="PATH")
        sub.add_argument("--no-wait", action="store_true", help="print the job and return")
        sub.add_argument("--timeout", type=float, metavar="S", help="wait at most S seconds")

    sub = commands.add("job", cmd_job, "show a job (a folder operation) and its progress")
    sub.add_argument("id", metavar="JOB_ID")
