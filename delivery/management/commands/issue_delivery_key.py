from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import ApiKey, Project
from delivery.services import delivery_key_issue_for
from storage_service.errors import ApiError


class Command(BaseCommand):
    help = (
        "Issue a delivery key for a project and mode; prints its id and its secret, which is "
        "shown this once. Sign delivery URLs with DELIVERY_KEY=<id>:<secret>."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project_id", help="The project's id (proj_...).")
        parser.add_argument("--mode", choices=ApiKey.Environment.values, default="test")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            project = Project.objects.get(id=options["project_id"])
        except Project.DoesNotExist as exc:
            raise CommandError(f"No project {options['project_id']!r}.") from exc
        try:
            issued = delivery_key_issue_for(project=project, mode=options["mode"])
        except ApiError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"{issued.key.id}:{issued.secret}")
        self.stdout.write(f"Issued delivery key {issued.key.id} ({options['mode']}).")
