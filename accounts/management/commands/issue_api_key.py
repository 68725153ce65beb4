from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import ApiKey, Project
from accounts.scopes import SCOPE_HELP, SCOPES
from accounts.services import api_key_issue


class Command(BaseCommand):
    help = (
        "Issue an API key for a project. The key is shown once, alone on the last line; only "
        "its hash is stored. Without --scopes the key is a full sk_ key (every scope); with "
        "--scopes it is a restricted rk_ key holding only those."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="The project's id (proj_...).")
        parser.add_argument(
            "--environment", required=True, choices=ApiKey.Environment.values, help="test or live"
        )
        parser.add_argument("--name", default="", help="An optional label for the key.")
        parser.add_argument(
            "--scopes",
            default=None,
            help="Comma-separated scopes of a restricted key: "
            + "; ".join(f"{name} ({SCOPE_HELP[name]})" for name in SCOPES)
            + ".",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            project = Project.objects.get(id=options["project"])
        except Project.DoesNotExist as exc:
            raise CommandError(f"No project {options['project']!r}.") from exc
        scopes = None if options["scopes"] is None else options["scopes"].split(",")
        try:
            issued = api_key_issue(
                project=project,
                environment=options["environment"],
                name=options["name"],
                scopes=scopes,
            )
        except ValueError as exc:
            raise CommandError(f"Refused: {exc}.") from exc
        held = issued.api_key.scopes
        kind = "full key (every scope)" if held is None else f"restricted key ({','.join(held)})"
        self.stdout.write(
            f"Issued {issued.api_key.environment} {kind} {issued.api_key.id} for project "
            f"{project.id}. Store it now: it cannot be shown again."
        )
        self.stdout.write(issued.raw_key)
