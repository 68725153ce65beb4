from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from files.usage import usage_recount


class Command(BaseCommand):
    help = (
        "Recompute each tenant's usage (held bytes, stored bytes, stored objects) from its "
        "stored objects and correct its usage delta rows where they differ. Exact while "
        "writers work; they never wait for it."
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
                f"{drift.project_id} {drift.mode}: held/stored bytes/objects were "
                f"{'/'.join(map(str, drift.kept))}, the objects say "
                f"{'/'.join(map(str, drift.fresh))}"
            )
        verb = "differ" if dry_run else "corrected"
        self.stdout.write(f"{len(drifts)} tenant(s) {verb}.")
