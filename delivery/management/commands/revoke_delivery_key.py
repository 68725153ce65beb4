from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from delivery.models import DeliveryKey
from delivery.services import delivery_key_revoke_by_id


class Command(BaseCommand):
    help = (
        "Revoke a delivery key at once: its URLs stop resolving (cached copies expire with "
        "their max-age). Safe to re-run: a revoked key stays revoked."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key_id", help="The delivery key's id (dk_...).")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            key = delivery_key_revoke_by_id(key_id=options["key_id"])
        except DeliveryKey.DoesNotExist as exc:
            raise CommandError(f"No delivery key {options['key_id']!r}.") from exc
        self.stdout.write(f"Revoked delivery key {key.id}.")
