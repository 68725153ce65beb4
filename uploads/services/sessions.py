"""What every transition of a multipart upload session shares: its part plan, its presigned
part URLs, its events, and how it ends.

Lock order: the session row, then the file row. Every transition takes them in that order,
and file transitions never lock a session, so no two transitions can deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from accounts.tenancy import Tenant
from events.models import Event
from events.services import event_record
from files.models import File
from files.services.common import discard
from storage_service import objectstore
from storage_service.errors import ApiError, UploadIsMultipart, UploadNotActive
from storage_service.timefmt import iso
from uploads.models import UploadSession
from uploads.sizing import PartPlan

Status = UploadSession.Status


@dataclass(frozen=True)
class PresignedParts:
    """Part URLs signed at one instant, so they share one expiry."""

    urls: list[tuple[int, str]]  # (part number, presigned PUT URL)
    expires_at: datetime


def plan_of(session: UploadSession) -> PartPlan:
    return PartPlan(size=session.size, part_size=session.part_size, part_count=session.part_count)


def upload_event(type: Event.Type, session: UploadSession, file: File, **extra: Any) -> None:
    event_record(
        tenant=Tenant.of(file),
        type=type,
        data={
            "uploadId": session.id,
            "fileId": file.id,
            "filename": file.filename,
            "path": file.path,
            "contentType": file.content_type,
            "size": session.size,
            "partSize": session.part_size,
            "partCount": session.part_count,
            "expiresAt": iso(session.expires_at),
            "uploadTokenId": file.upload_token_id,
            **extra,
        },
    )


def presign_parts(session: UploadSession, numbers: list[int]) -> PresignedParts:
    """Presign the PUT of each part: pure CPU, a few microseconds per part.

    URLs live SERVICE_UPLOAD_URL_TTL_SECONDS, never past the session's own expiry; a client
    that needs longer asks for fresh ones.
    """
    remaining = int((session.expires_at - timezone.now()).total_seconds())
    ttl = max(1, min(settings.SERVICE_UPLOAD_URL_TTL_SECONDS, remaining))
    signer = objectstore.part_signer(
        key=session.stored_object.storage_key,
        upload_id=session.provider_upload_id,
        expires_in=ttl,
    )
    plan = plan_of(session)
    url = signer.url
    return PresignedParts(
        urls=[(n, url(n, plan.part_length(n))) for n in numbers], expires_at=signer.expires_at
    )


def check_open(session: UploadSession) -> None:
    if session.status != Status.ACTIVE:
        raise UploadNotActive(f"The upload is {session.status}.")
    if session.expires_at <= timezone.now():
        raise UploadNotActive("The upload has expired; start a new one.")


def multipart_complete_refusal(*, file: File) -> ApiError | None:
    """files' ``single_complete_refusal`` hook (registered in UploadsConfig.ready): a file
    whose bytes arrive in parts is completed by its session, which assembles them."""
    session_id = UploadSession.objects.filter(file=file).values_list("id", flat=True).first()
    if session_id is None:
        return None
    return UploadIsMultipart(
        "This file is uploaded in parts; complete it with "
        f"POST /v1/uploads/multipart/{session_id}/complete.",
        details={"uploadId": session_id},
    )


def end_session(session: UploadSession, file: File, reason: str) -> None:
    """Mark the session aborted and its file failed; the object goes to the purge.

    Only a file still pending on this session's object fails. A file deleted while pending
    stays deleted but would be restored as failed (its bytes can never come now); the purge
    of that file removes the object.
    """
    now = timezone.now()
    session.status = Status.ABORTED
    session.abort_reason = reason
    session.aborted_at = now
    session.save(update_fields=["status", "abort_reason", "aborted_at", "updated_at"])
    if file.current_object_id == session.stored_object_id:
        if file.status == File.Status.PENDING:
            file.status = File.Status.FAILED
            file.save(update_fields=["status", "updated_at"])
            discard(session.stored_object)
        elif (
            file.status == File.Status.DELETED and file.status_before_delete == File.Status.PENDING
        ):
            file.status_before_delete = File.Status.FAILED
            file.save(update_fields=["status_before_delete", "updated_at"])
    upload_event(Event.Type.UPLOAD_ABORTED, session, file, reason=reason)


def lock_session_file(session: UploadSession, tenant: Tenant) -> File:
    file = File.objects.select_for_update().get(id=session.file_id)
    file.project = tenant.project
    return file
