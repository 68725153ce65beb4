from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.services import project_create


class Command(BaseCommand):
    help = (
        "Create a project (and its organization if new). Prints the project's id as the last "
        "line, ready for issue_api_key --project."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="The project's name.")
        parser.add_argument(
            "--organization",
            default=None,
            help="The organization's name (created if new). Defaults to the project's name.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = project_create(name=options["name"], organization_name=options["organization"])
        self.stdout.write(
            f"Created project {project.name!r} in organization {project.organization.name!r}."
        )
        self.stdout.write(project.id)
