from __future__ import annotations

import argparse
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.limits import clean_allowed_types, limits_set
from accounts.models import ApiKey, Project

NONE = "none"


def _bytes_or_none(text: str) -> int | None:
    """A non-negative integer of bytes, or ``none`` to remove the limit."""
    if text.strip().lower() == NONE:
        return None
    value = text.strip()
    if not value.isascii() or not value.isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a non-negative integer of bytes (or 'none')."
        )
    return int(value)


def _types_or_none(text: str) -> list[str] | None:
    if text.strip().lower() == NONE:
        return None
    try:
        return clean_allowed_types(text.split(","))
    except DjangoValidationError as exc:
        raise argparse.ArgumentTypeError(" ".join(exc.messages)) from exc


def _shown(value: Any) -> str:
    if value is None:
        return "no limit"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


class Command(BaseCommand):
    help = (
        "Set a project's limits in one mode (test or live). Only the limits given change; "
        "'none' removes one. Sizes are non-negative integers of bytes. Safe to re-run. "
        "Example: set_project_limits --project proj_… --environment live --max-storage-bytes "
        '10737418240 --allowed-content-types "image/*,application/pdf"'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="The project's id (proj_…).")
        parser.add_argument(
            "--environment",
            required=True,
            choices=ApiKey.Environment.values,
            help="The mode the limits apply to: test or live (each has its own).",
        )
        parser.add_argument(
            "--max-storage-bytes",
            type=_bytes_or_none,
            default=argparse.SUPPRESS,
            metavar="N|none",
            help="Bytes the store may hold for this mode (every version, the trash until "
            "purged, variants); uploads past it answer 403 QUOTA_EXCEEDED.",
        )
        parser.add_argument(
            "--max-file-size-bytes",
            type=_bytes_or_none,
            default=argparse.SUPPRESS,
            metavar="N|none",
            help="Largest declared size of one file; larger uploads answer 413 FILE_TOO_LARGE.",
        )
        parser.add_argument(
            "--allowed-content-types",
            type=_types_or_none,
            default=argparse.SUPPRESS,
            metavar='"type/sub,type/*"|none',
            help="Comma-separated MIME types, exact or 'type/*'; others answer 422 "
            "CONTENT_TYPE_NOT_ALLOWED (checked again against the sniffed type at complete).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(id=options["project"]).first()
        if project is None:
            raise CommandError(f"No project {options['project']!r}.")
        changes = {
            field: options[field]
            for field in ("max_storage_bytes", "max_file_size_bytes", "allowed_content_types")
            if field in options
        }
        try:
            limits = limits_set(project=project, mode=options["environment"], changes=changes)
        except DjangoValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        self.stdout.write(
            f"Limits of {project.id} ({limits.mode}): "
            f"max storage {_shown(limits.max_storage_bytes)}, "
            f"max file size {_shown(limits.max_file_size_bytes)}, "
            f"allowed types {_shown(limits.allowed_content_types)}."
        )
