"""``storage`` subcommands on files: upload, resume, ls, usage, info, get, url, mv, cp, rm,
restore and thumb."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from storage_client.cli_output import (
    PROG,
    Bar,
    emit,
    fail,
    file_details,
    file_line,
    human_size,
    show_file,
    variant_line,
)
from storage_client.cli_parser import Commands
from storage_client.client import Client
from storage_client.errors import StorageError
from storage_client.models import File, Folder


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
        emit(args, [file.raw for file in uploaded])
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
    return emit(
        args,
        {"folders": [f.raw for f in folders], "files": [f.raw for f in files]},
        *(f"{folder.path}/  ({folder.file_count} files)" for folder in folders),
        *(file_line(file) for file in files),
    )


def cmd_usage(client: Client, args: argparse.Namespace) -> int:
    usage = client.usage()
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
    return emit(args, usage.raw, *(f"{label + ':':<19}{value}" for label, value in rows))


def cmd_info(client: Client, args: argparse.Namespace) -> int:
    file = client.files.get(args.id)
    return emit(args, file.raw, *file_details(file))


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
    return emit(
        args,
        {"id": file.id, "path": str(destination), "size": size},
        f"{destination}  {human_size(size)}",
    )


_DELIVERY_OPTIONS = ("width", "height", "fit", "format", "quality", "version")


def cmd_url(client: Client, args: argparse.Namespace) -> int:
    """A delivery URL when a delivery key is held or a delivery option is given (signed
    offline with the key, else by the API); otherwise a presigned download URL."""
    options = {name: getattr(args, name) for name in _DELIVERY_OPTIONS}
    if client.delivery_key is not None or any(v is not None for v in options.values()):
        url = client.files.delivery_url(args.id, **options, expires_in_seconds=args.expires)
    else:
        url = client.files.download_url(args.id, expires_in=args.expires)
    return emit(args, {"id": args.id, "url": url}, url)


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
    return emit(
        args,
        {"id": args.id, "deleted": True},
        f"deleted {args.id} (restore with: {PROG} restore {args.id})",
    )


def cmd_restore(client: Client, args: argparse.Namespace) -> int:
    return show_file(client.files.restore(args.id), args)


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
    lines = [variant_line(variant)]
    if args.output:
        written = client.variants.download(args.id, variant.id, args.output)
        lines.append(f"{args.output}  {human_size(written)}")
    return emit(args, variant.raw, *lines)


def add_file_commands(commands: Commands) -> None:
    sub = commands.add("upload", cmd_upload, "upload files (in parallel parts when large)")
    sub.add_argument("files", nargs="+", metavar="FILE")
    sub.add_argument("--path", help="folder to upload into (default: the root)")
    sub.add_argument("--metadata", nargs="*", metavar="KEY=VALUE", help="custom metadata")
    sub.add_argument("--content-type", help="default: guessed from the file name")
    sub.add_argument(
        "--expires-at",
        metavar="TIME",
        help="delete the files then (ISO 8601 UTC, e.g. 2027-01-31T00:00:00Z)",
    )

    sub = commands.add("resume", cmd_resume, "finish an interrupted upload from the same file")
    sub.add_argument("upload_id", metavar="UPLOAD_ID")
    sub.add_argument("file", metavar="FILE")

    sub = commands.add("ls", cmd_ls, "list a folder's folders and files (default: the root)")
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

    commands.add(
        "usage", cmd_usage, "show what this key's mode stores and downloads, and its limits"
    )

    sub = commands.add("info", cmd_info, "show a file")
    sub.add_argument("id", metavar="ID")

    sub = commands.add("get", cmd_get, "download a file (DEST: a path, a folder, or - for stdout)")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("dest", nargs="?", metavar="DEST")

    sub = commands.add(
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

    sub = commands.add("mv", cmd_mv, "rename or move: NEWPATH is folder/, folder/name or name")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("newpath", metavar="NEWPATH")

    sub = commands.add("cp", cmd_cp, "copy a file (no bytes are copied)")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--path", help="folder of the copy (default: the same; '/' the root)")
    sub.add_argument("--filename", help="name of the copy (default: the same)")

    sub = commands.add("rm", cmd_rm, "delete a file (restorable until the purge)")
    sub.add_argument("id", metavar="ID")

    sub = commands.add("restore", cmd_restore, "restore a deleted file")
    sub.add_argument("id", metavar="ID")

    sub = commands.add("thumb", cmd_thumb, "make a resized copy of an image and wait for it")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--width", type=int, required=True, metavar="W")
    sub.add_argument("--height", type=int, metavar="H")
    sub.add_argument("--fit", help="cover (default), contain, fill, inside, outside")
    sub.add_argument("--format", metavar="F", help="webp (default), jpeg, png, avif")
    sub.add_argument("--quality", type=int, metavar="Q", help="1-100 (80)")
    sub.add_argument("--timeout", type=float, default=60, metavar="S", help="wait (60 s)")
    sub.add_argument("--output", "-o", metavar="DEST", help="also download it here")
