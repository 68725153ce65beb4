"""What the ``storage`` command writes: JSON or one line per object on stdout, errors as one
line on stderr, progress bars on stderr."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn

from tqdm import tqdm

from storage_client.models import Event, File, Variant, Webhook

PROG = "storage"


def fail(message: str) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def emit_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def emit(args: argparse.Namespace, value: Any, *lines: str) -> int:
    """``value`` as JSON with ``--json``, else the lines of text; the exit code (0)."""
    if args.json:
        emit_json(value)
    else:
        for line in lines:
            print(line)
    return 0


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


def show_file(file: File, args: argparse.Namespace) -> int:
    return emit(args, file.raw, file_line(file))


def file_details(file: File) -> list[str]:
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
    return [f"{label + ':':<14}{value}" for label, value in rows]


def variant_line(variant: Variant) -> str:
    size = f"{variant.width}x{variant.height}" if variant.width else "-"
    return f"{variant.id}  {variant.label}  {variant.status}  {size}  {human_size(variant.size)}"


def webhook_line(webhook: Webhook) -> str:
    events = ",".join(webhook.events) if webhook.events else "(every event)"
    return f"{webhook.id}  {webhook.status}  {webhook.url}  {events}"


def event_line(event: Event) -> str:
    created = event.created_at.isoformat(timespec="seconds")
    return f"{event.id}  {created}  {event.type}"


class Bar:
    """A progress bar on stderr (silent when stderr is not a terminal): of one transfer, in
    bytes, or of a job, in files (``total`` unknown until the job has counted them)."""

    def __init__(self, label: str, total: int | None, *, unit: str = "B") -> None:
        in_bytes = unit == "B"
        self._bar = tqdm(
            total=total,
            desc=label,
            unit=unit,
            unit_scale=in_bytes,
            unit_divisor=1024 if in_bytes else 1000,
            disable=None,  # off when stderr is not a TTY
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
