from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from files.usage import usage_recount


class Command(BaseCommand):
    help = (
        "Recompute the usage counters (bytes stored, objects, pending reservations, uploaded "
        "files per project and mode) from the object and file rows, and rewrite those that "
        "differ. Writes to objects and files wait while it counts."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", default=None, help="Recount this project only (proj_...).")
        parser.add_argument(
            "--dry-run", action="store_true", help="Report the differences; change nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = options["dry_run"]
        drifts = usage_recount(project_id=options["project"], fix=not dry_run)
        for drift in drifts:
            self.stdout.write(
                f"{drift.project_id} {drift.mode}: counted bytes/objects/pending/files "
                f"{'/'.join(map(str, drift.counted))}, rows say "
                f"{'/'.join(map(str, drift.fresh))}"
            )
        verb = "differ" if dry_run else "corrected"
        self.stdout.write(f"{len(drifts)} tenant(s) {verb}.")
