"""Every state change of a multipart upload session, each in one transaction.

Lock order: the session row, then the file row. Every transition here takes them in that
order, and file transitions never lock a session, so no two transitions can deadlock.
"""

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
from events.services import event_record
from files.events import record_file_event
from files.models import File, IdempotencyRecord, StoredObject
from files.services.common import Verified, discard, publish, verify
from files.services.grants import grant_admit, grant_recheck, grant_replay
from files.services.idempotency import MULTIPART, idempotency_claim, idempotency_remember
from files.services.limits import limits_check, storage_reserve
from storage_service import objectstore
from storage_service.errors import (
    ApiError,
    FileNotPending,
    FileTooLarge,
    StorageUnavailable,
    UploadIsMultipart,
    UploadNotActive,
    UploadPartsIncomplete,
    UploadSizeMismatch,
    ValidationError,
)
from storage_service.timefmt import iso
from uploads.auth import token_has_room
from uploads.models import UploadSession
from uploads.selectors import upload_get, upload_lock
from uploads.sizing import PartPlan, plan_parts

logger = logging.getLogger(__name__)

Status = UploadSession.Status
Reason = UploadSession.AbortReason


@dataclass(frozen=True)
class PresignedParts:
    """Part URLs signed at one instant, so they share one expiry."""

    urls: list[tuple[int, str]]  # (part number, presigned PUT URL)
    expires_at: datetime


@dataclass(frozen=True)
class StartedMultipart:
    file: File
    session: UploadSession
    parts: PresignedParts
    replayed: bool = False  # answered from an Idempotency-Key record


def plan_of(session: UploadSession) -> PartPlan:
    return PartPlan(size=session.size, part_size=session.part_size, part_count=session.part_count)


def _upload_event(type: Event.Type, session: UploadSession, file: File, **extra: Any) -> None:
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


def _presign(session: UploadSession, numbers: list[int]) -> PresignedParts:
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


def _check_open(session: UploadSession) -> None:
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


# --- Initiate --------------------------------------------------------------------------------


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
    upload_token_id = None
    if grant is not None:
        admitted = grant_admit(
            grant, path=path, size=size, content_type=content_type, metadata=metadata
        )
        path, metadata, upload_token_id = admitted.path, admitted.metadata, grant.token_id
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
            file = File.objects.create(
                **tenant.owner(),
                filename=filename,
                path=path,
                content_type=content_type,
                size=size,
                metadata=metadata,
                expires_at=expires_at,
                current_object=stored,
                upload_token_id=upload_token_id,
            )
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
            _upload_event(Event.Type.UPLOAD_INITIATED, session, file)
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
    parts = _presign(session, list(range(1, plan.part_count + 1)))
    return StartedMultipart(file=file, session=session, parts=parts)


class _Superseded(Exception):
    """Rolls back a session start whose Idempotency-Key a concurrent request answered."""


def _replay(record: IdempotencyRecord) -> StartedMultipart:
    """The session an Idempotency-Key created, as it is now, with fresh part URLs (URLs are
    not stored: a session may have 10,000 of them, and presigning is pure CPU)."""
    session = UploadSession.objects.select_related("file", "stored_object").get(
        id=record.response_body["uploadId"]
    )
    parts = _presign(session, list(range(1, session.part_count + 1)))
    return StartedMultipart(file=session.file, session=session, parts=parts, replayed=True)


# --- Fresh URLs and the parts held ---------------------------------------------------------


def upload_sign_parts(*, tenant: Tenant, upload_id: str, part_numbers: list[int]) -> PresignedParts:
    """Fresh presigned URLs for the given parts of an active session."""
    session = upload_get(tenant=tenant, upload_id=upload_id)
    _check_open(session)
    beyond = sorted(n for n in part_numbers if n > session.part_count)
    if beyond:
        raise ValidationError(
            f"This upload has parts 1 to {session.part_count}.",
            details={"partNumbers": [f"No part {n}." for n in beyond[:20]]},
        )
    return _presign(session, part_numbers)


def _by_number(held: list[objectstore.HeldPart]) -> dict[int, list[objectstore.HeldPart]]:
    versions: dict[int, list[objectstore.HeldPart]] = {}
    for part in held:
        versions.setdefault(part.number, []).append(part)
    return versions


def _best_version(versions: list[objectstore.HeldPart], length: int) -> objectstore.HeldPart:
    """The version of a part to show when the store holds several (SeaweedFS keeps every
    upload of a part number): one of the right length if any, else the latest."""

    def rank(part: objectstore.HeldPart) -> tuple[bool, float]:
        modified = part.last_modified.timestamp() if part.last_modified else 0.0
        return (part.size == length, modified)

    return max(versions, key=rank)


def upload_parts_held(*, tenant: Tenant, upload_id: str) -> list[objectstore.HeldPart]:
    """The parts the store holds for an active session, every page of them, one per part
    number, in part order."""
    session = upload_get(tenant=tenant, upload_id=upload_id)
    _check_open(session)
    held = objectstore.multipart_parts(
        key=session.stored_object.storage_key, upload_id=session.provider_upload_id
    )
    if held is None:
        raise UploadNotActive("The store no longer holds this upload; start a new one.")
    plan = plan_of(session)
    return [
        _best_version(versions, plan.part_length(number))
        for number, versions in sorted(_by_number(held).items())
    ]


# --- Complete --------------------------------------------------------------------------------


def _check_listed(session: UploadSession, parts: list[tuple[int, str]]) -> None:
    """The client's list must be exactly parts 1..N (409 UPLOAD_PARTS_INCOMPLETE)."""
    numbers = {n for n, _ in parts}
    expected = set(range(1, session.part_count + 1))
    if numbers != expected:
        missing = sorted(expected - numbers)
        unexpected = sorted(numbers - expected)
        details: dict[str, Any] = {"expectedParts": session.part_count, "givenParts": len(parts)}
        if missing:
            details["missingParts"] = missing[:100]
        if unexpected:
            details["unexpectedParts"] = unexpected[:100]
        raise UploadPartsIncomplete(
            f"Complete needs every part from 1 to {session.part_count}, each once.",
            details=details,
        )


def _check_held(
    session: UploadSession, parts: list[tuple[int, str]], held: list[objectstore.HeldPart]
) -> None:
    """Every listed part is held with the client's etag and its exact length.

    Checked before assembling: the store would assemble parts of any length, and once it has
    the session's parts are gone. Refused here, the client can still PUT a part again.
    """
    versions = _by_number(held)
    not_held = [n for n, _ in parts if n not in versions]
    if not_held:
        raise UploadPartsIncomplete(
            "The store does not hold every part yet: PUT the missing parts, then complete.",
            details={"missingParts": not_held[:100]},
        )
    # The version the store will assemble is the one with the client's etag.
    by_number = {
        n: next((part for part in versions[n] if part.etag == etag), None) for n, etag in parts
    }
    other_etag = [n for n, part in by_number.items() if part is None]
    if other_etag:
        raise UploadPartsIncomplete(
            "Some etags are not those of the parts the store holds (a part was uploaded again?).",
            details={"etagMismatch": other_etag[:100]},
        )
    sizes = {n: part.size for n, part in by_number.items() if part is not None}
    plan = plan_of(session)
    wrong = [
        {"partNumber": n, "expectedSize": plan.part_length(n), "actualSize": sizes[n]}
        for n, _ in parts
        if sizes[n] != plan.part_length(n)
    ]
    if wrong:
        actual = sum(sizes.values())
        raise UploadSizeMismatch(
            f"The parts hold {actual} bytes in the wrong lengths; {session.size} were declared"
            f" in parts of {session.part_size}. PUT those parts again, then complete.",
            details={"declaredSize": session.size, "actualSize": actual, "parts": wrong[:100]},
        )


def _end(session: UploadSession, file: File, reason: str) -> None:
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
    _upload_event(Event.Type.UPLOAD_ABORTED, session, file, reason=reason)


def _lock_file(session: UploadSession, tenant: Tenant) -> File:
    file = File.objects.select_for_update().get(id=session.file_id)
    file.project = tenant.project
    return file


def _after_concurrent_end(tenant: Tenant, upload_id: str) -> UploadNotActive | None:
    """The answer to a complete whose parts the store refused while no row was locked, if the
    session has ended meanwhile (None: it is still active, and the refusal stands).

    A concurrent abort releases the parts at the store before it commits, so missing parts may
    be its trace, not the client's mistake: wait for whatever holds the session's lock (no
    store call under it), and if the session has ended meanwhile, answer that, as if this
    complete had waited for the abort."""
    with transaction.atomic():
        session = upload_lock(tenant=tenant, upload_id=upload_id)
    if session.status != Status.ACTIVE:
        return UploadNotActive(f"The upload is {session.status}.")
    return None


def upload_complete(*, tenant: Tenant, upload_id: str, parts: list[tuple[int, str]]) -> File:
    """Assemble the parts and publish the file.

    The store is asked with no row locked (a slow store blocks no other request), then one
    short transaction locks, re-checks and writes:

    1. Only an active, unexpired session of a pending file completes (409 UPLOAD_NOT_ACTIVE,
       FILE_NOT_PENDING).
    2. The list must be parts 1..N (409 UPLOAD_PARTS_INCOMPLETE).
    3. The store must hold each with that etag and its exact length (409
       UPLOAD_PARTS_INCOMPLETE / UPLOAD_SIZE_MISMATCH); nothing changes, so the client can
       PUT a part again and retry. Parts taken meanwhile by a concurrent complete (the object
       is at the key: go on to 4) or abort (the session has ended: UPLOAD_NOT_ACTIVE) are not
       the client's mistake.
    4. Assemble at the store, then verify the object (real size, type, checksum). If the store
       no longer has the upload but has the object, a previous (or concurrent) complete
       assembled it: verify that object.
    5. Lock the session, then its file, and check 1 again: of two concurrent completes, or a
       complete and an abort, the later sees the outcome of the first and is refused, as if it
       had waited for it. Verified: publish version 1, session completed; ``upload.completed``
       and ``file.uploaded``. Refused: session aborted, file failed, and the answer says why.
    """
    session = upload_get(tenant=tenant, upload_id=upload_id)
    _check_open(session)
    file = File.objects.get(id=session.file_id)
    if file.status != File.Status.PENDING:
        raise FileNotPending(f"The upload's file is {file.status}; restore it first.")
    _check_listed(session, parts)
    stored = session.stored_object
    key, provider_id = stored.storage_key, session.provider_upload_id
    held = objectstore.multipart_parts(key=key, upload_id=provider_id)
    assembled = False
    if held is not None:
        try:
            _check_held(session, parts, held)
            try:
                assembled = objectstore.multipart_complete(
                    key=key, upload_id=provider_id, parts=sorted(parts)
                )
            except objectstore.MultipartRefused as exc:
                raise UploadPartsIncomplete(
                    "The store refused the parts (one was replaced meanwhile?); list them again.",
                    details={"storeCode": exc.code},
                ) from exc
        except (UploadPartsIncomplete, UploadSizeMismatch) as refused:
            # The parts may have gone meanwhile to a concurrent complete (the store lists
            # fewer of them while, or after, it assembles the object) or abort: not the
            # client's mistake. An object at the key means a complete assembled it: verify
            # that object, as in step 4, and the locked re-check below answers as if this
            # request had waited for the other.
            if objectstore.head(key) is None:
                ended = _after_concurrent_end(tenant, upload_id)
                if ended is None:
                    raise
                raise ended from refused
    outcome: Verified | ApiError | None = None  # None: the store lost the upload
    if assembled or objectstore.head(key) is not None:
        outcome = grant_recheck(file, stored, verify(stored))

    refusal: ApiError | None = None
    with transaction.atomic():
        session = upload_lock(tenant=tenant, upload_id=upload_id)
        # Only the status: a session that expires while the store assembles it still
        # completes; its client asked in time.
        if session.status != Status.ACTIVE:
            raise UploadNotActive(f"The upload is {session.status}.")
        file = _lock_file(session, tenant)
        if file.status != File.Status.PENDING:
            raise FileNotPending(f"The upload's file is {file.status}; restore it first.")
        stored = session.stored_object
        if outcome is None:
            _end(session, file, Reason.LOST)
            refusal = UploadNotActive("The store no longer holds this upload; start a new one.")
        elif isinstance(outcome, ApiError):
            _end(session, file, Reason.REFUSED)
            refusal = outcome
        else:
            publish(file, stored, outcome, version=1)
            session.status = Status.COMPLETED
            session.completed_at = timezone.now()
            session.save(update_fields=["status", "completed_at", "updated_at"])
            _upload_event(Event.Type.UPLOAD_COMPLETED, session, file, checksum=file.checksum)
            record_file_event(Event.Type.FILE_UPLOADED, file, checksum=file.checksum)
    if refusal is not None:
        raise refusal  # after the commit, so the aborted session and failed file are kept
    return file


# --- Abort and expiry ------------------------------------------------------------------------


def _abort(session: UploadSession, tenant: Tenant, reason: str) -> None:
    """Release the parts at the store, then end the session (the caller holds its lock).

    Store first: if it fails nothing changes (503, retry); an abort the store already did is
    a success, so a retry after a failed commit is safe.
    """
    objectstore.multipart_abort(
        key=session.stored_object.storage_key, upload_id=session.provider_upload_id
    )
    _end(session, _lock_file(session, tenant), reason)


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
