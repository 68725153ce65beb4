"""Starting a multipart upload session: the pending file, the session, every part presigned."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.grants import UploadGrant
from accounts.tenancy import Tenant
from events.models import Event
from files.events import record_file_event
from files.models import File, IdempotencyRecord, StoredObject
from files.services.common import pending_file
from files.services.grants import grant_admit, grant_replay
from files.services.idempotency import MULTIPART, idempotency_claim, idempotency_remember
from files.services.limits import limits_check, storage_reserve
from storage_service import objectstore
from storage_service.errors import FileTooLarge, StorageUnavailable
from uploads.auth import token_has_room
from uploads.models import UploadSession
from uploads.services.sessions import PresignedParts, presign_parts, upload_event
from uploads.sizing import plan_parts

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StartedMultipart:
    file: File
    session: UploadSession
    parts: PresignedParts
    replayed: bool = False  # answered from an Idempotency-Key record


def upload_start(
    *,
    tenant: Tenant,
    filename: str,
    content_type: str,
    size: int,
    path: str | None = None,
    metadata: dict[str, Any] | None = None,
    expires_at: datetime | None = None,
    idempotency_key: str | None = None,
    request_hash: str = "",
    grant: UploadGrant | None = None,
) -> StartedMultipart:
    """Create a pending file and an active session with a presigned URL for every part.

    0. With an upload token's ``grant``: its bounds (files/services/grants.py) before
       anything else, and its count of files in step 4's transaction.
    1. Refuse sizes above SERVICE_MAX_MULTIPART_UPLOAD_BYTES (413); choose the part size.
    2. With an Idempotency-Key already answered: replay that answer (same body) or refuse
       (another body), before touching the store.
    3. Start the store's multipart upload (a network call, so outside the transaction).
    4. One transaction: under the key's lock, check the key again (a concurrent twin may
       have won meanwhile: replay it and abort our store upload); then the stored object,
       the pending file, the session, the key's record; ``file.created`` and
       ``upload.initiated``. Should it fail, the store's upload is aborted so no parts can
       be left behind at the store.
    5. Presign every part (pure CPU, after the commit).
    """
    admitted = grant_admit(
        grant, path=path, size=size, content_type=content_type, metadata=metadata
    )
    limit = settings.SERVICE_MAX_MULTIPART_UPLOAD_BYTES
    if size > limit:
        raise FileTooLarge(
            f"A multipart upload is at most {limit} bytes.", details={"maxSize": limit}
        )
    limits = limits_check(tenant=tenant, content_type=content_type, size=size)

    def claim() -> IdempotencyRecord | None:
        if idempotency_key is None:
            return None
        return idempotency_claim(
            tenant=tenant, key=idempotency_key, request_hash=request_hash, kind=MULTIPART
        )

    if idempotency_key is not None:
        with transaction.atomic():
            answered = claim()
        if answered is not None:
            replayed = _replay(answered)
            grant_replay(grant, replayed.file)
            return replayed
    if grant is not None:
        # Before the store's upload is started; the exact count is the claim below.
        token_has_room(grant.token_id)
    plan = plan_parts(size)
    storage_key = objectstore.new_key(tenant.project_id)
    provider_upload_id = objectstore.multipart_start(key=storage_key, content_type=content_type)
    record = None
    try:
        with transaction.atomic():
            record = claim()
            if record is not None:
                # Another request with this key won the race; ours is dropped below.
                raise _Superseded
            if grant is not None:
                grant.claim()
            storage_reserve(tenant=tenant, limits=limits, size=size)
            # No upload_expires_at: the single-upload expiry sweep must leave this object
            # alone; the session's own expiry governs it.
            stored = StoredObject.objects.create(
                **tenant.owner(),
                storage_key=storage_key,
                declared_type=content_type,
                declared_size=size,
                upload_expires_at=None,
            )
            file = pending_file(tenant, stored, admitted, filename=filename, expires_at=expires_at)
            session = UploadSession.objects.create(
                **tenant.owner(),
                file=file,
                stored_object=stored,
                provider_upload_id=provider_upload_id,
                size=size,
                part_size=plan.part_size,
                part_count=plan.part_count,
                expires_at=timezone.now()
                + timedelta(hours=settings.SERVICE_MULTIPART_UPLOAD_EXPIRY_HOURS),
            )
            if idempotency_key is not None:
                idempotency_remember(
                    tenant=tenant,
                    key=idempotency_key,
                    request_hash=request_hash,
                    kind=MULTIPART,
                    file=file,
                    response={"uploadId": session.id},
                )
            record_file_event(Event.Type.FILE_CREATED, file)
            upload_event(Event.Type.UPLOAD_INITIATED, session, file)
    except BaseException as exc:
        try:
            objectstore.multipart_abort(key=storage_key, upload_id=provider_upload_id)
        except StorageUnavailable:
            logger.warning("could not abort the store upload of failed session start")
        if isinstance(exc, _Superseded) and record is not None:
            superseded = _replay(record)
            grant_replay(grant, superseded.file)
            return superseded
        raise
    parts = presign_parts(session, list(range(1, plan.part_count + 1)))
    return StartedMultipart(file=file, session=session, parts=parts)


class _Superseded(Exception):
    """Rolls back a session start whose Idempotency-Key a concurrent request answered."""


def _replay(record: IdempotencyRecord) -> StartedMultipart:
    """The session an Idempotency-Key created, as it is now, with fresh part URLs (URLs are
    not stored: a session may have 10,000 of them, and presigning is pure CPU)."""
    session = UploadSession.objects.select_related("file", "stored_object").get(
        id=record.response_body["uploadId"]
    )
    parts = presign_parts(session, list(range(1, session.part_count + 1)))
    return StartedMultipart(file=session.file, session=session, parts=parts, replayed=True)
