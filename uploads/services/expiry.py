"""Ending a multipart upload session without its file: the client's abort and the expiry sweep."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from accounts.tenancy import Tenant
from storage_service import objectstore
from storage_service.errors import StorageUnavailable, UploadNotActive
from uploads.models import UploadSession
from uploads.selectors import upload_lock
from uploads.services.sessions import end_session, lock_session_file

logger = logging.getLogger(__name__)

Status = UploadSession.Status
Reason = UploadSession.AbortReason


def _abort(session: UploadSession, tenant: Tenant, reason: str) -> None:
    """Release the parts at the store, then end the session (the caller holds its lock).

    Store first: if it fails nothing changes (503, retry); an abort the store already did is
    a success, so a retry after a failed commit is safe.
    """
    objectstore.multipart_abort(
        key=session.stored_object.storage_key, upload_id=session.provider_upload_id
    )
    end_session(session, lock_session_file(session, tenant), reason)


def upload_abort(*, tenant: Tenant, upload_id: str) -> UploadSession:
    """Abort an active session; aborting an aborted one succeeds and changes nothing."""
    with transaction.atomic():
        session = upload_lock(tenant=tenant, upload_id=upload_id)
        if session.status == Status.ABORTED:
            return session
        if session.status == Status.COMPLETED:
            raise UploadNotActive("The upload is completed; delete the file instead.")
        _abort(session, tenant, Reason.CLIENT)
        return session


def uploads_expire(*, now: datetime | None = None, batch: int = 100) -> int:
    """The expiry sweep: abort active sessions past their expiry. Returns how many.

    Safe to run twice and from several workers: each session is claimed in its own
    transaction with ``SKIP LOCKED`` and re-checked; one the store cannot abort now is left
    for the next run.
    """
    cutoff = now or timezone.now()
    due = UploadSession.objects.filter(status=Status.ACTIVE, expires_at__lt=cutoff)
    expired = 0
    failed: set[str] = set()
    while True:
        ids = list(
            due.exclude(id__in=failed).order_by("expires_at").values_list("id", flat=True)[:batch]
        )
        before = (expired, len(failed))
        for session_id in ids:
            try:
                with transaction.atomic():
                    session = (
                        due.select_for_update(skip_locked=True, of=("self",))
                        .select_related("project", "stored_object")
                        .filter(id=session_id)
                        .first()
                    )
                    if session is None:
                        continue
                    _abort(session, Tenant.of(session), Reason.EXPIRED)
                    expired += 1
            except StorageUnavailable:
                logger.warning("expiry sweep: the store could not abort %s; next run", session_id)
                failed.add(session_id)
        # Done, or every due session is held by another sweep: leave those to it.
        if len(ids) < batch or (expired, len(failed)) == before:
            return expired
