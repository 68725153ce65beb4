from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import ApiKey
from accounts.services import api_key_revoke


class Command(BaseCommand):
    help = "Revoke an API key at once. Safe to re-run: a revoked key stays revoked."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key_id", help="The key's id (key_...), as shown by issue_api_key.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            api_key = api_key_revoke(key_id=options["key_id"])
        except ApiKey.DoesNotExist as exc:
            raise CommandError(f"No API key {options['key_id']!r}.") from exc
        self.stdout.write(f"Revoked key {api_key.id} ({api_key.prefix}…).")
