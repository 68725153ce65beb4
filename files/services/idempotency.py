"""Idempotency-Key records: the first answer to an upload creation, replayed on retry.

Used by single uploads (files/services/upload.py), multipart sessions (uploads/services/start.py)
and batches (files/services/batch.py).
A record remembers which kind of creation made it, so a key reused on the other route is
refused like a key reused with another body.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from accounts.tenancy import Tenant
from files.models import File, IdempotencyRecord
from storage_service.errors import IdempotencyKeyReused

SINGLE = "single"
MULTIPART = "multipart"
BATCH = "batch"


def idempotency_claim(
    *, tenant: Tenant, key: str, request_hash: str, kind: str
) -> IdempotencyRecord | None:
    """The record a retry replays, or None when the key is new (or forgotten).

    Call inside a transaction: it takes a lock on (project, mode, key) held until commit, so two
    requests with one key cannot both create. A record of another body or another kind of
    creation: 409 IDEMPOTENCY_KEY_REUSED.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            [f"{tenant.project_id}:{tenant.mode}:{key}"],
        )
    cutoff = timezone.now() - timedelta(hours=settings.SERVICE_IDEMPOTENCY_TTL_HOURS)
    record = IdempotencyRecord.objects.filter(
        project_id=tenant.project_id, mode=tenant.mode, key=key
    ).first()
    if record is None:
        return None
    if record.created_at < cutoff:
        record.delete()  # keys are remembered for a day, then may be reused
        return None
    # Records written before kinds existed are single uploads (they hold the upload's url).
    if record.request_hash != request_hash or record.response_body.get("kind", SINGLE) != kind:
        raise IdempotencyKeyReused(
            "This Idempotency-Key was already used with a different request body.",
            details={"idempotencyKey": key},
        )
    return record


def idempotency_remember(
    *,
    tenant: Tenant,
    key: str,
    request_hash: str,
    kind: str,
    file: File | None,
    response: dict[str, Any],
) -> None:
    """Record the answer to replay (in the creating transaction, under the claim's lock)."""
    IdempotencyRecord.objects.create(
        **tenant.owner(),
        key=key,
        request_hash=request_hash,
        file=file,
        response_body={**response, "kind": kind},
    )
