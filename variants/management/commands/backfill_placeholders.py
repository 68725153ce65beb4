from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from storage_service.errors import StorageUnavailable
from variants.backfill import placeholders_backfill_batch


class Command(BaseCommand):
    help = (
        "Give a placeholder (the ThumbHash of the thumbnail) to every image file whose current "
        "thumbnail is ready but that has none, as images uploaded before placeholders existed. "
        "Works in batches in file id order and prints where each ended; safe to stop, re-run "
        "(files already done are not read again) and run beside the workers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--batch-size", type=int, default=200, help="Files per batch (default 200)."
        )
        parser.add_argument(
            "--after",
            default="",
            metavar="FILE_ID",
            help="Start after this file id (the last one a stopped run printed).",
        )
        parser.add_argument(
            "--limit", type=int, default=None, help="Stop after examining this many files."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        size, limit = options["batch_size"], options["limit"]
        if size < 1 or (limit is not None and limit < 1):
            raise CommandError("--batch-size and --limit must be at least 1.")
        after = options["after"]
        examined = filled = skipped = 0
        while limit is None or examined < limit:
            try:
                left = size if limit is None else min(size, limit - examined)
                batch = placeholders_backfill_batch(after=after, size=left)
            except StorageUnavailable as exc:
                raise CommandError(
                    f"The object store did not answer ({exc}); run again with --after "
                    f"{after or '(nothing)'} to go on."
                ) from exc
            if batch.last_file_id is None:
                break
            examined += batch.examined
            filled += batch.filled
            skipped += batch.skipped
            after = batch.last_file_id
            self.stdout.write(
                f"batch: {batch.filled} filled, {batch.skipped} skipped, up to {after}"
            )
        self.stdout.write(
            f"Placeholders: {filled} filled, {skipped} skipped of {examined} file(s) examined."
        )
