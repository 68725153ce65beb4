"""The staff console's previews: delivery URLs (the same form as any, delivery/signing.py)
signed with the console's own key of the tenant.

Staff browsing never touches what the customer has: the console's key is made on first need,
one per project and mode, marked ``console``; the API never lists it, never counts it under
the cap of active keys, never signs with it and cannot revoke it; staff revoke or rotate it in
the admin. What it resolves counts against neither the project's delivery budget nor its
bandwidth (delivery/resolution.py): that traffic is the operator's, not the customer's.

URLs expire soon (``CONSOLE_URL_SECONDS`` at least), at a multiple of ``CONSOLE_URL_STEP``, so
pages opened within one step name the same URL and the browser's cache of it serves them.
"""

from __future__ import annotations

import time

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from accounts.models import Project
from accounts.tenancy import Tenant
from delivery import signing
from delivery.models import DeliveryKey
from delivery.secret import new_salt, secret_of
from delivery.services import base_url
from files.models import File
from variants.models import Variant
from variants.services import THUMBNAIL

CONSOLE_URL_SECONDS = 15 * 60
CONSOLE_URL_STEP = 5 * 60


def console_key(tenant: Tenant) -> DeliveryKey:
    """The tenant's active console key, made on first need (under the project's row lock,
    so two first pages at once make one)."""
    found = DeliveryKey.objects.for_console(tenant).active().order_by("-id").first()
    if found is not None:
        return found
    with transaction.atomic():
        Project.objects.select_for_update().filter(id=tenant.project_id).values_list("id").get()
        found = DeliveryKey.objects.for_console(tenant).active().order_by("-id").first()
        if found is None:
            found = DeliveryKey.objects.create(**tenant.owner(), salt=new_salt(), console=True)
    return found


def console_key_rotate(key_id: str) -> DeliveryKey:
    """Revoke a console key (its URLs stop resolving at once) and make the tenant's next."""
    with transaction.atomic():
        key = DeliveryKey.objects.select_for_update().get(id=key_id, console=True)
        if key.revoked_at is None:
            key.revoked_at = timezone.now()
            key.save(update_fields=["revoked_at"])
    return console_key(Tenant(project=key.project, mode=key.mode))


def console_expiry(now: float | None = None) -> int:
    """At least CONSOLE_URL_SECONDS ahead, rounded up to a step: stable within the step."""
    now = time.time() if now is None else now
    return (int(now + CONSOLE_URL_SECONDS) // CONSOLE_URL_STEP + 1) * CONSOLE_URL_STEP


class ConsoleSigner:
    """Signs the console's preview URLs for one request: one console key per tenant, read
    once (files/console.py asks for URLs through ``files.console.preview_signer``)."""

    def __init__(self, request: HttpRequest) -> None:
        self.base = base_url(request.build_absolute_uri("/"))
        self.expires = console_expiry()
        self.keys: dict[tuple[str, str], tuple[str, str]] = {}

    def _key(self, file: File) -> tuple[str, str]:
        owner = (file.project_id, file.mode)
        if owner not in self.keys:
            key = console_key(Tenant(project=file.project, mode=file.mode))
            self.keys[owner] = (key.id, secret_of(key_id=key.id, salt=key.salt))
        return self.keys[owner]

    def url(self, file: File, *, version: int | None = None, thumbnail: bool = False) -> str:
        """The file's bytes (the current version, or the pinned one), or its thumbnail."""
        key_id, secret = self._key(file)
        options = signing.Options(version=version, expires=self.expires)
        if thumbnail:
            options = signing.Options(
                width=THUMBNAIL.width,
                height=THUMBNAIL.height,
                fit=THUMBNAIL.fit,
                format=THUMBNAIL.format,
                quality=THUMBNAIL.quality,
                version=version,
                expires=self.expires,
            )
        return self.base + signing.delivery_path(secret, key_id, file.id, options)

    def thumbnails(self, files: list[File]) -> dict[str, str]:
        """The ready thumbnails of these files' current versions (one query), never ordering
        one: a file without a ready thumbnail is left out (the page shows an icon)."""
        ready = set(
            Variant.objects.filter(
                file_id__in=[file.id for file in files],
                label=THUMBNAIL.label,
                status=Variant.Status.READY,
            ).values_list("file_id", "version")
        )
        return {
            file.id: self.url(file, version=file.version, thumbnail=True)
            for file in files
            if (file.id, file.version) in ready
        }
