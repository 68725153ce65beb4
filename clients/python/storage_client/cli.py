"""The ``storage`` command: the client's operations from a shell.

Every subcommand takes ``--json`` (the API's own JSON on stdout, for scripts) and
``--api-key``/``--base-url`` (else ``STORAGE_API_KEY``/``STORAGE_BASE_URL``). Errors are one
line on stderr and exit code 1. Progress bars go to stderr, only when it is a terminal.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Callable, NoReturn

from tqdm import tqdm

from storage_client._version import __version__
from storage_client.cli_tokens import add_upload_token_commands
from storage_client.client import Client
from storage_client.errors import StorageError
from storage_client.models import Event, File, Folder, Job, Variant, Webhook

PROG = "storage"


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors as one line and exit code 1, like every error."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see `{self.prog} --help`)")


def fail(message: str) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(1)


# --- Output -----------------------------------------------------------------------------------


def emit_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def human_size(size: int | None) -> str:
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def full_name(file: File) -> str:
    return f"{file.path}/{file.filename}" if file.path else file.filename


def file_line(file: File) -> str:
    when = file.updated_at.strftime("%Y-%m-%d %H:%M")
    return f"{file.id}  {human_size(file.size):>10}  {when}  {file.status:<8}  {full_name(file)}"


def file_details(file: File) -> None:
    rows = [
        ("id", file.id),
        ("name", full_name(file)),
        ("content type", file.content_type),
        ("size", f"{file.size} ({human_size(file.size)})"),
        ("status", file.status),
        ("version", str(file.version)),
        ("checksum", file.checksum or "-"),
        ("created", file.created_at.isoformat()),
        ("updated", file.updated_at.isoformat()),
        ("uploaded", file.uploaded_at.isoformat() if file.uploaded_at else "-"),
    ]
    if file.deleted_at:
        rows.append(("deleted", file.deleted_at.isoformat()))
    if file.expires_at:
        rows.append(("expires", file.expires_at.isoformat()))
    if file.metadata:
        rows.append(("metadata", json.dumps(file.metadata, ensure_ascii=False)))
    for label, value in rows:
        print(f"{label + ':':<14}{value}")


def variant_line(variant: Variant) -> str:
    size = f"{variant.width}x{variant.height}" if variant.width else "-"
    return f"{variant.id}  {variant.label}  {variant.status}  {size}  {human_size(variant.size)}"


def webhook_line(webhook: Webhook) -> str:
    events = ",".join(webhook.events) if webhook.events else "(every event)"
    return f"{webhook.id}  {webhook.status}  {webhook.url}  {events}"


class Bar:
    """A progress bar on stderr for one transfer (silent when stderr is not a terminal)."""

    def __init__(self, label: str, total: int) -> None:
        self._bar = tqdm(
            total=total,
            desc=label,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            disable=None,  # off when stderr is not a TTY
            leave=True,
            dynamic_ncols=True,
            file=sys.stderr,
        )

    def __call__(self, done: int, total: int) -> None:
        if total and self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        self._bar.close()


class JobBar:
    """A progress bar on stderr for a job, in files (silent when stderr is not a terminal)."""

    def __init__(self, label: str) -> None:
        self._bar = tqdm(
            total=None,
            desc=label,
            unit="files",
            disable=None,
            leave=True,
            dynamic_ncols=True,
            file=sys.stderr,
        )

    def __call__(self, done: int, total: int) -> None:
        if total and self._bar.total != total:
            self._bar.total = total
            self._bar.refresh()
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        self._bar.close()


# --- Subcommands ------------------------------------------------------------------------------


def parse_metadata(items: Sequence[str], flag: str = "--metadata") -> dict[str, str] | None:
    if not items:
        return None
    metadata: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"{flag} takes key=value, not {item!r}")
        metadata[key] = value
    return metadata


def cmd_upload(client: Client, args: argparse.Namespace) -> int:
    metadata = parse_metadata(args.metadata or [])
    uploaded: list[File] = []
    failures = 0
    for name in args.files:
        source = Path(name)
        if not source.is_file():
            print(f"{PROG}: error: {name}: no such file", file=sys.stderr)
            failures += 1
            continue
        bar = Bar(source.name, source.stat().st_size)
        try:
            file = client.files.upload(
                source,
                path=args.path,
                metadata=metadata,
                content_type=args.content_type,
                progress=bar,
                expires_at=args.expires_at,
            )
        except StorageError as exc:
            bar.close()
            hint = ""
            if exc.upload_id:
                hint = f"; resume with: {PROG} resume {exc.upload_id} {name}"
            print(f"{PROG}: error: {name}: {exc}{hint}", file=sys.stderr)
            failures += 1
            continue
        except KeyboardInterrupt as exc:
            bar.close()
            upload_id = getattr(exc, "upload_id", None)
            if upload_id:
                fail(f"interrupted; resume with: {PROG} resume {upload_id} {name}")
            fail("interrupted")
        bar.close()
        uploaded.append(file)
        if not args.json:
            print(file_line(file))
    if args.json:
        emit_json([file.raw for file in uploaded])
    return 1 if failures else 0


def cmd_resume(client: Client, args: argparse.Namespace) -> int:
    source = Path(args.file)
    bar = Bar(source.name, source.stat().st_size if source.is_file() else 0)
    try:
        file = client.uploads.resume(args.upload_id, source, progress=bar)
    finally:
        bar.close()
    return show_file(file, args)


def cmd_ls(client: Client, args: argparse.Namespace) -> int:
    folders: list[Folder] = []
    path = args.path
    if path is not None:
        path = path.strip("/")
    if not args.search and not args.deleted:
        folders = list(client.folders.list(parent=path or None))
    meta = parse_metadata(args.meta or [], flag="--meta") or {}
    if args.recursive or meta:
        folders = []  # the files of a whole tree, or those matching: no folder rows
    if args.recursive:
        listed_path = path or None  # no path: the whole tree from the root
    elif path is not None or not (args.search or args.deleted or meta):
        listed_path = path or "/"
    else:
        listed_path = None
    files = list(
        client.files.list(
            path=listed_path,
            search=args.search,
            status="deleted" if args.deleted else None,
            page_size=100,
            metadata=meta,
            recursive=bool(args.recursive and listed_path),
        )
    )
    if args.json:
        emit_json({"folders": [f.raw for f in folders], "files": [f.raw for f in files]})
        return 0
    for folder in folders:
        print(f"{folder.path}/  ({folder.file_count} files)")
    for file in files:
        print(file_line(file))
    return 0


def cmd_usage(client: Client, args: argparse.Namespace) -> int:
    usage = client.usage()
    if args.json:
        emit_json(usage.raw)
        return 0
    limits = usage.limits

    def limit(value: int | None) -> str:
        return "no limit" if value is None else f"{value} ({human_size(value)})"

    rows = [
        ("storage", f"{usage.storage_bytes} ({human_size(usage.storage_bytes)})"),
        ("files", str(usage.files)),
        (f"bandwidth {usage.bandwidth_month}", human_size(usage.bandwidth_bytes)),
        ("max storage", limit(limits.max_storage_bytes)),
        ("max file size", limit(limits.max_file_size_bytes)),
        ("allowed types", ", ".join(limits.allowed_content_types or []) or "any"),
    ]
    for label, value in rows:
        print(f"{label + ':':<19}{value}")
    return 0


def cmd_info(client: Client, args: argparse.Namespace) -> int:
    file = client.files.get(args.id)
    if args.json:
        emit_json(file.raw)
    else:
        file_details(file)
    return 0


def cmd_get(client: Client, args: argparse.Namespace) -> int:
    file = client.files.get(args.id)
    bar = Bar(file.filename, file.size)
    if args.dest == "-":
        try:
            client.files.download(file.id, sys.stdout.buffer, progress=bar)
        finally:
            bar.close()
        return 0
    destination = Path(args.dest) if args.dest else Path(file.filename)
    if destination.is_dir():
        destination = destination / file.filename
    try:
        size = client.files.download(file.id, destination, progress=bar)
    finally:
        bar.close()
    if args.json:
        emit_json({"id": file.id, "path": str(destination), "size": size})
    else:
        print(f"{destination}  {human_size(size)}")
    return 0


_DELIVERY_OPTIONS = ("width", "height", "fit", "format", "quality", "version")


def cmd_url(client: Client, args: argparse.Namespace) -> int:
    """A delivery URL when a delivery key is held or a delivery option is given (signed
    offline with the key, else by the API); otherwise a presigned download URL."""
    options = {name: getattr(args, name) for name in _DELIVERY_OPTIONS}
    if client.delivery_key is not None or any(v is not None for v in options.values()):
        url = client.files.delivery_url(args.id, **options, expires_in_seconds=args.expires)
    else:
        url = client.files.download_url(args.id, expires_in=args.expires)
    if args.json:
        emit_json({"id": args.id, "url": url})
    else:
        print(url)
    return 0


def split_destination(target: str) -> dict[str, Any]:
    """``mv``'s NEWPATH: ``folder/`` moves (``/`` is the root), ``folder/name`` moves and
    renames, a bare ``name`` renames in place."""
    if target.endswith("/"):
        return {"path": target.strip("/") or None}
    if "/" in target:
        folder, _, name = target.rpartition("/")
        return {"path": folder.strip("/") or None, "filename": name}
    return {"filename": target}


def cmd_mv(client: Client, args: argparse.Namespace) -> int:
    file = client.files.update(args.id, **split_destination(args.newpath))
    return show_file(file, args)


def cmd_cp(client: Client, args: argparse.Namespace) -> int:
    path = args.path
    if path is not None:
        path = path.strip("/")  # "" (or "/") is the root
    file = client.files.copy(args.id, path=path, filename=args.filename)
    return show_file(file, args)


def cmd_rm(client: Client, args: argparse.Namespace) -> int:
    client.files.delete(args.id)
    if args.json:
        emit_json({"id": args.id, "deleted": True})
    else:
        print(f"deleted {args.id} (restore with: {PROG} restore {args.id})")
    return 0


def cmd_restore(client: Client, args: argparse.Namespace) -> int:
    return show_file(client.files.restore(args.id), args)


def run_folder_job(args: argparse.Namespace, label: str, start: Callable[..., Job]) -> int:
    """Start a folder job and, unless --no-wait, follow it with a progress bar until it
    ends."""
    if args.no_wait:
        job = start(wait=False)
    else:
        bar = JobBar(label)
        try:
            job = start(wait=True, timeout=args.timeout, progress=bar)
        finally:
            bar.close()
    if args.json:
        emit_json(job.raw)
    elif job.done:
        print(f"{job.status}: {job.files_done} file(s) ({job.id})")
    else:
        print(f"started {job.id} (follow it with: {PROG} job {job.id})")
    return 0


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
    if args.json:
        emit_json(job.raw)
    else:
        total = "?" if job.files_total is None else str(job.files_total)
        print(f"{job.id}  {job.type}  {job.status}  {job.files_done}/{total} files")
        if job.error:
            print(f"error: {job.error.get('code')}: {job.error.get('message')}")
    return 0


def show_file(file: File, args: argparse.Namespace) -> int:
    if args.json:
        emit_json(file.raw)
    else:
        print(file_line(file))
    return 0


def cmd_thumb(client: Client, args: argparse.Namespace) -> int:
    variant = client.variants.create(
        args.id,
        width=args.width,
        height=args.height,
        fit=args.fit,
        format=args.format,
        quality=args.quality,
        wait=True,
        timeout=args.timeout,
    )
    written = None
    if args.output:
        written = client.variants.download(args.id, variant.id, args.output)
    if args.json:
        emit_json(variant.raw)
    else:
        print(variant_line(variant))
        if written is not None:
            print(f"{args.output}  {human_size(written)}")
    return 0


def cmd_webhooks_ls(client: Client, args: argparse.Namespace) -> int:
    webhooks = client.webhooks.list()
    if args.json:
        emit_json([w.raw for w in webhooks])
    else:
        for webhook in webhooks:
            print(webhook_line(webhook))
    return 0


def cmd_webhooks_add(client: Client, args: argparse.Namespace) -> int:
    events = [e.strip() for e in args.events.split(",") if e.strip()] if args.events else None
    webhook, secret = client.webhooks.create(args.url, events=events)
    if args.json:
        emit_json({"webhook": webhook.raw, "secret": secret})
    else:
        print(webhook_line(webhook))
        print(f"secret: {secret}  (shown once: store it now)")
    return 0


def cmd_webhooks_rm(client: Client, args: argparse.Namespace) -> int:
    client.webhooks.delete(args.id)
    if args.json:
        emit_json({"id": args.id, "deleted": True})
    else:
        print(f"deleted {args.id}")
    return 0


def cmd_webhooks_rotate(client: Client, args: argparse.Namespace) -> int:
    webhook, secret = client.webhooks.rotate_secret(args.id, overlap_seconds=args.overlap)
    if args.json:
        emit_json({"webhook": webhook.raw, "secret": secret})
    else:
        print(webhook_line(webhook))
        print(f"secret: {secret}  (shown once: store it now)")
        if webhook.previous_secret_expires_at is not None:
            ends = webhook.previous_secret_expires_at.isoformat(timespec="seconds")
            print(f"the old secret also signs until {ends}")
    return 0


def cmd_webhooks_replay(client: Client, args: argparse.Namespace) -> int:
    count = client.webhooks.replay(args.id, since=args.since, until=args.until)
    if args.json:
        emit_json({"deliveries": count})
    else:
        print(f"{count} deliveries made for {args.id}")
    return 0


def event_line(event: Event) -> str:
    created = event.created_at.isoformat(timespec="seconds")
    return f"{event.id}  {created}  {event.type}"


def cmd_events(client: Client, args: argparse.Namespace) -> int:
    if args.id:
        event = client.events.get(args.id)
        emit_json(event.raw)  # the envelope, as its webhooks received it
        return 0
    events = list(itertools.islice(client.events.list(type=args.type), args.limit))
    if args.json:
        emit_json([e.raw for e in events])
    else:
        for event in events:
            print(event_line(event))
    return 0


# --- The parser -------------------------------------------------------------------------------


def _common() -> _Parser:
    # SUPPRESS: the options may come before or after the subcommand without one overwriting
    # the other with its default.
    common = _Parser(add_help=False)
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON for scripts"
    )
    common.add_argument(
        "--api-key",
        default=argparse.SUPPRESS,
        metavar="KEY",
        help="API key (default: $STORAGE_API_KEY)",
    )
    common.add_argument(
        "--base-url",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="the service's address (default: $STORAGE_BASE_URL)",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = _Parser(
        prog=PROG,
        description="Upload, list, download and manage files of the storage service.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    def add(name: str, handler: Callable[[Client, argparse.Namespace], int], text: str) -> Any:
        sub = commands.add_parser(name, parents=[common], help=text, description=text)
        sub.set_defaults(handler=handler)
        return sub

    sub = add("upload", cmd_upload, "upload files (in parallel parts when large)")
    sub.add_argument("files", nargs="+", metavar="FILE")
    sub.add_argument("--path", help="folder to upload into (default: the root)")
    sub.add_argument("--metadata", nargs="*", metavar="KEY=VALUE", help="custom metadata")
    sub.add_argument("--content-type", help="default: guessed from the file name")
    sub.add_argument(
        "--expires-at",
        metavar="TIME",
        help="delete the files then (ISO 8601 UTC, e.g. 2027-01-31T00:00:00Z)",
    )

    sub = add("resume", cmd_resume, "finish an interrupted upload from the same file")
    sub.add_argument("upload_id", metavar="UPLOAD_ID")
    sub.add_argument("file", metavar="FILE")

    sub = add("ls", cmd_ls, "list a folder's folders and files (default: the root)")
    sub.add_argument("path", nargs="?", metavar="PATH")
    sub.add_argument("--search", help="files whose name contains this (every folder)")
    sub.add_argument("--deleted", action="store_true", help="list the trash instead")
    sub.add_argument(
        "--meta",
        action="append",
        metavar="KEY=VALUE",
        help="only files whose metadata has KEY equal to VALUE (repeat: all must match; "
        "a number or true/false matches the stored number or boolean too)",
    )
    sub.add_argument(
        "-r",
        "--recursive",
        action="store_true",
        help="the files of PATH and of every folder below it (no PATH: every file)",
    )

    sub = add("usage", cmd_usage, "show what this key's mode stores and downloads, and its limits")

    sub = add("info", cmd_info, "show a file")
    sub.add_argument("id", metavar="ID")

    sub = add("get", cmd_get, "download a file (DEST: a path, a folder, or - for stdout)")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("dest", nargs="?", metavar="DEST")

    sub = add(
        "url",
        cmd_url,
        "print a delivery URL (with a delivery key, or any of --width ... --version), else a "
        "download URL",
    )
    sub.add_argument("id", metavar="ID")
    sub.add_argument(
        "--expires",
        type=int,
        metavar="S",
        help="seconds: a download URL 60 to 86400 (3600); a delivery URL 60 to 31536000 "
        "(never expires)",
    )
    sub.add_argument("--width", type=int, metavar="PX")
    sub.add_argument("--height", type=int, metavar="PX")
    sub.add_argument("--fit", choices=["cover", "contain", "fill", "inside", "outside"])
    sub.add_argument("--format", choices=["webp", "jpeg", "png", "avif", "auto"])
    sub.add_argument("--quality", type=int, metavar="Q", help="1 to 100")
    sub.add_argument("--version", type=int, metavar="N", help="pin this version of the file")

    sub = add("mv", cmd_mv, "rename or move: NEWPATH is folder/, folder/name or name")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("newpath", metavar="NEWPATH")

    sub = add("cp", cmd_cp, "copy a file (no bytes are copied)")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--path", help="folder of the copy (default: the same; '/' the root)")
    sub.add_argument("--filename", help="name of the copy (default: the same)")

    sub = add("rm", cmd_rm, "delete a file (restorable until the purge)")
    sub.add_argument("id", metavar="ID")

    sub = add("restore", cmd_restore, "restore a deleted file")
    sub.add_argument("id", metavar="ID")

    sub = add("thumb", cmd_thumb, "make a resized copy of an image and wait for it")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--width", type=int, required=True, metavar="W")
    sub.add_argument("--height", type=int, metavar="H")
    sub.add_argument("--fit", help="cover (default), contain, fill, inside, outside")
    sub.add_argument("--format", metavar="F", help="webp (default), jpeg, png, avif")
    sub.add_argument("--quality", type=int, metavar="Q", help="1-100 (80)")
    sub.add_argument("--timeout", type=float, default=60, metavar="S", help="wait (60 s)")
    sub.add_argument("--output", "-o", metavar="DEST", help="also download it here")

    folder_commands = (
        ("mv-folder", cmd_mv_folder, "move or rename a folder: every file under FROM to TO"),
        ("rm-folder", cmd_rm_folder, "delete every file of a folder (restorable)"),
        ("restore-folder", cmd_restore_folder, "restore every deleted file of a folder"),
    )
    for name, handler, text in folder_commands:
        sub = add(name, handler, text)
        if name == "mv-folder":
            sub.add_argument("source", metavar="FROM")
            sub.add_argument("to", metavar="TO", help="'/' is the root")
        else:
            sub.add_argument("path", metavar="PATH")
        sub.add_argument("--no-wait", action="store_true", help="print the job and return")
        sub.add_argument("--timeout", type=float, metavar="S", help="wait at most S seconds")

    sub = add("job", cmd_job, "show a job (a folder operation) and its progress")
    sub.add_argument("id", metavar="JOB_ID")

    hooks = add("webhooks", cmd_webhooks_ls, "list, add or remove webhook endpoints")
    actions = hooks.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    action = actions.add_parser("ls", parents=[common], help="list the endpoints")
    action.set_defaults(handler=cmd_webhooks_ls)
    action = actions.add_parser("add", parents=[common], help="register an endpoint")
    action.add_argument("url", metavar="URL")
    action.add_argument("--events", metavar="E1,E2", help="event types (default: all)")
    action.set_defaults(handler=cmd_webhooks_add)
    action = actions.add_parser("rm", parents=[common], help="remove an endpoint")
    action.add_argument("id", metavar="ID")
    action.set_defaults(handler=cmd_webhooks_rm)
    action = actions.add_parser(
        "rotate", parents=[common], help="give an endpoint a new signing secret"
    )
    action.add_argument("id", metavar="ID")
    action.add_argument(
        "--overlap",
        type=int,
        metavar="S",
        help="seconds the old secret still signs, 0 to 604800 (86400)",
    )
    action.set_defaults(handler=cmd_webhooks_rotate)
    action = actions.add_parser(
        "replay", parents=[common], help="send an endpoint the events of a window again"
    )
    action.add_argument("id", metavar="ID")
    action.add_argument("--since", required=True, metavar="TIME", help="e.g. 2026-11-24T00:00Z")
    action.add_argument("--until", metavar="TIME", help="default: now")
    action.set_defaults(handler=cmd_webhooks_replay)

    add_upload_token_commands(add, common, _Parser)

    sub = add("events", cmd_events, "list recent events, newest first, or show one")
    sub.add_argument("id", nargs="?", metavar="EVENT_ID", help="show this event's envelope")
    sub.add_argument("--type", metavar="TYPE", help="only this event type (file.uploaded, ...)")
    sub.add_argument("--limit", type=int, default=20, metavar="N", help="at most N (20)")
    return parser


def main(argv: Iterable[str] | None = None) -> int:
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    args.json = getattr(args, "json", False)
    try:
        client = Client(
            api_key=getattr(args, "api_key", None) or os.environ.get("STORAGE_API_KEY"),
            base_url=getattr(args, "base_url", None) or os.environ.get("STORAGE_BASE_URL"),
            delivery_key=os.environ.get("STORAGE_DELIVERY_KEY"),
        )
    except StorageError as exc:
        fail(str(exc))
    try:
        with client:
            code: int = args.handler(client, args)
            return code
    except StorageError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
    except KeyboardInterrupt:
        fail("interrupted")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
