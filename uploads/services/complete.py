"""Completing a multipart upload session: the parts assembled at the store, verified, published."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.tenancy import Tenant
from events.models import Event
from files.events import record_file_event
from files.models import File
from files.services.common import Verified, publish, verify
from files.services.grants import grant_recheck
from storage_service import objectstore
from storage_service.errors import (
    ApiError,
    FileNotPending,
    UploadNotActive,
    UploadPartsIncomplete,
    UploadSizeMismatch,
)
from uploads.models import UploadSession
from uploads.selectors import upload_get, upload_lock
from uploads.services.parts import parts_by_number
from uploads.services.sessions import (
    check_open,
    end_session,
    lock_session_file,
    plan_of,
    upload_event,
)

Status = UploadSession.Status
Reason = UploadSession.AbortReason


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
    versions = parts_by_number(held)
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


def _after_concurrentend_session(tenant: Tenant, upload_id: str) -> UploadNotActive | None:
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
    check_open(session)
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
                ended = _after_concurrentend_session(tenant, upload_id)
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
        file = lock_session_file(session, tenant)
        if file.status != File.Status.PENDING:
            raise FileNotPending(f"The upload's file is {file.status}; restore it first.")
        stored = session.stored_object
        if outcome is None:
            end_session(session, file, Reason.LOST)
            refusal = UploadNotActive("The store no longer holds this upload; start a new one.")
        elif isinstance(outcome, ApiError):
            end_session(session, file, Reason.REFUSED)
            refusal = outcome
        else:
            publish(file, stored, outcome, version=1)
            session.status = Status.COMPLETED
            session.completed_at = timezone.now()
            session.save(update_fields=["status", "completed_at", "updated_at"])
            upload_event(Event.Type.UPLOAD_COMPLETED, session, file, checksum=file.checksum)
            record_file_event(Event.Type.FILE_UPLOADED, file, checksum=file.checksum)
    if refusal is not None:
        raise refusal  # after the commit, so the aborted session and failed file are kept
    return file
