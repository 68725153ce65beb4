from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from files.services import files_purge_expired


class Command(BaseCommand):
    help = (
        "Purge soft-deleted files whose grace window has elapsed: remove their stored objects "
        "(every version) unless a live file still uses them, and record file.purged. Safe to "
        "re-run; the beat schedule runs the same sweep."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--grace-days",
            type=int,
            default=None,
            help="Override SERVICE_DELETE_GRACE_DAYS for this run (0 purges every deleted file).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="List what would be purged; change nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        grace = options["grace_days"]
        if grace is not None and grace < 0:
            self.stderr.write("--grace-days must be at least 0")
            raise SystemExit(2)
        report = files_purge_expired(grace_days=grace, dry_run=options["dry_run"])
        for file_id in report.files:
            self.stdout.write(f"{'would purge' if report.dry_run else 'purged'} {file_id}")
        if report.dry_run:
            self.stdout.write(f"Dry run: {len(report.files)} file(s) would be purged.")
        else:
            self.stdout.write(
                f"Purged {len(report.files)} file(s); removed {report.objects_removed} object(s)."
            )
