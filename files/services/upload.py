"""Single uploads: start (with Idempotency-Key) and complete."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from accounts.grants import UploadGrant
from accounts.tenancy import Tenant
from events.models import Event
from files import hooks
from files.events import record_file_event
from files.models import File
from files.services.common import (
    StartedUpload,
    Status,
    check_single_put_size,
    discard,
    lock_file,
    new_object,
    pending_file,
    presign_upload,
    publish,
    read_file,
    verify,
)
from files.services.grants import grant_admit, grant_owns, grant_recheck, grant_replay
from files.services.idempotency import SINGLE, idempotency_claim, idempotency_remember
from files.services.limits import limits_check, storage_reserve
from storage_service import objectstore
from storage_service.errors import (
    ApiError,
    FileNotPending,
)

# --- Single upload -------------------------------------------------------------------------


def file_upload_start(
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
) -> StartedUpload:
    """Create a pending file and presign the PUT of its bytes.

    0. With an upload token's ``grant``: its bounds first (files/services/grants.py), and
       its count of files in the start's own transaction (an idempotent replay counts
       nothing).

    1. Refuse sizes above the single-PUT limit (413; larger files use multipart), and what
       the tenant's limits refuse (413, 422); under a storage limit, reserve the size (403
       when it does not fit) in the transaction that inserts the pending object.
    2. With an Idempotency-Key: serialize requests with that key (advisory lock), and replay
       the first request's file and upload descriptor if the body is the same; a different
       body under the same key is refused.
    3. Otherwise create the stored object and the file, and record ``file.created``, in one
       transaction: the change and its event commit (or vanish) together.
    """
    check_single_put_size(size)
    admitted = grant_admit(
        grant, path=path, size=size, content_type=content_type, metadata=metadata
    )
    limits = limits_check(tenant=tenant, content_type=content_type, size=size)
    with transaction.atomic():
        if idempotency_key is not None:
            replay = _idempotent_replay(tenant, idempotency_key, request_hash)
            if replay is not None:
                grant_replay(grant, replay.file)
                return replay
        if grant is not None:
            grant.claim()
        storage_reserve(tenant=tenant, limits=limits, size=size)
        stored = new_object(tenant, content_type=content_type, size=size)
        file = pending_file(tenant, stored, admitted, filename=filename, expires_at=expires_at)
        upload = presign_upload(stored)
        if idempotency_key is not None:
            idempotency_remember(
                tenant=tenant,
                key=idempotency_key,
                request_hash=request_hash,
                kind=SINGLE,
                file=file,
                response={
                    "url": upload.url,
                    "method": upload.method,
                    "headers": upload.headers,
                    "expiresAt": upload.expires_at.isoformat(),
                },
            )
        record_file_event(Event.Type.FILE_CREATED, file)
    return StartedUpload(file=file, upload=upload)


def _idempotent_replay(tenant: Tenant, key: str, request_hash: str) -> StartedUpload | None:
    record = idempotency_claim(tenant=tenant, key=key, request_hash=request_hash, kind=SINGLE)
    if record is None:
        return None
    file = File.objects.get(id=record.file_id)
    saved = record.response_body
    upload = objectstore.PresignedUpload(
        url=saved["url"],
        method=saved["method"],
        headers=saved["headers"],
        expires_at=datetime.fromisoformat(saved["expiresAt"]),
    )
    return StartedUpload(file=file, upload=upload, replayed=True)


def file_complete(*, tenant: Tenant, file_id: str, grant: UploadGrant | None = None) -> File:
    """Verify the uploaded bytes and publish version 1.

    1. Only a pending file can complete (409 FILE_NOT_PENDING), and not one another app
       uploads (a multipart file: 409 UPLOAD_IS_MULTIPART, from uploads).
    2. Read the stored object's real size and type, with no lock held. No bytes yet: 409
       OBJECT_NOT_FOUND and nothing changes. Then lock the file and check 1 again. Bytes of
       another size or a contradicting type: the file becomes ``failed`` (the presigned PUT
       cannot overwrite them, so they can never become right) and the answer says why.
    3. Otherwise the file becomes ``uploaded`` with its checksum; ``file.uploaded``.
    """
    file = read_file(tenant, file_id)
    grant_owns(grant, file)
    _check_completable(file)
    stored = file.current_object
    # The store's answers, with no row locked: a slow store holds no lock.
    verified = grant_recheck(file, stored, verify(stored))
    with transaction.atomic():
        file = lock_file(tenant, file_id)
        # Re-checked under the lock: of two concurrent completes, the second sees the first's
        # outcome and is refused (409), exactly as if it had waited for it.
        _check_completable(file)
        if file.current_object_id != stored.id:
            raise FileNotPending("The file changed while its bytes were checked; retry.")
        stored = file.current_object
        if isinstance(verified, ApiError):
            file.status = Status.FAILED
            file.save(update_fields=["status", "updated_at"])
            discard(stored)
            refusal: ApiError | None = verified
        else:
            refusal = None
            publish(file, stored, verified, version=1)
            record_file_event(Event.Type.FILE_UPLOADED, file, checksum=file.checksum)
    if refusal is not None:
        raise refusal  # after the commit, so the file's failed state is kept
    return file


def _check_completable(file: File) -> None:
    if file.status != Status.PENDING:
        raise FileNotPending(f"The file is {file.status}; only a pending file can complete.")
    # A multipart file completes through its session (uploads refuses it here).
    for owned in hooks.single_complete_refusal.send(file=file):
        if owned is not None:
            raise owned
