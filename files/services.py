"""Every state change of a file: one function per transition, each in one transaction.

Each transition locks the file row (``select_for_update``) and re-checks the state under the
lock, so two concurrent calls give one success and one 409, never two successes. Events are
written in the same transaction (the outbox in ``webhooks``).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Project
from files.events import record_file_event
from files.models import File, FileVersion, IdempotencyRecord, StoredObject
from storage_service import objectstore
from storage_service.errors import (
    ApiError,
    ContentTypeMismatch,
    FileNotDeleted,
    FileNotFound,
    FileNotPending,
    FileNotUploaded,
    FileTooLarge,
    IdempotencyKeyReused,
    NoReplaceInProgress,
    ObjectNotFound,
    ReplaceInProgress,
    UploadSizeMismatch,
)
from storage_service.ids import looks_like_id, new_id
from storage_service.sniff import SNIFF_BYTES, contradicts, recorded_type, sniff
from storage_service.timefmt import iso
from webhooks.models import Event

Status = File.Status


@dataclass(frozen=True)
class StartedUpload:
    file: File
    upload: objectstore.PresignedUpload
    replayed: bool = False


# --- Helpers -------------------------------------------------------------------------------


def _lock_file(project: Project, file_id: str, *, include_deleted: bool = False) -> File:
    """The file row, locked for this transaction; 404 when missing, foreign or deleted."""
    if not looks_like_id(file_id, "file"):
        raise FileNotFound("No such file.")
    queryset = File.objects.for_project(project).select_for_update()
    if not include_deleted:
        queryset = queryset.visible()
    # No select_related here: when this statement waits for another transaction's lock,
    # PostgreSQL re-reads the locked file row but not the rows joined to it, so a joined
    # replacement_object would be the stale one. Related rows are read after the lock.
    file = queryset.filter(id=file_id).first()
    if file is None:
        raise FileNotFound("No such file.")
    file.project = project  # the caller's instance, so events read no extra row
    return file


def _new_object(project: Project, *, content_type: str, size: int) -> StoredObject:
    ttl = settings.SERVICE_UPLOAD_URL_TTL_SECONDS
    return StoredObject.objects.create(
        project=project,
        # Random, never derived from the filename or path: renames never touch the store.
        storage_key=f"{project.id}/{new_id('obj')}",
        declared_type=content_type,
        declared_size=size,
        upload_expires_at=timezone.now() + timedelta(seconds=ttl),
    )


def _presign_upload(stored: StoredObject) -> objectstore.PresignedUpload:
    return objectstore.presign_put(
        key=stored.storage_key,
        content_type=stored.declared_type,
        size=stored.declared_size,
        expires_in=settings.SERVICE_UPLOAD_URL_TTL_SECONDS,
    )


def _discard(stored: StoredObject | None) -> None:
    """Hand an object nothing uses to the purge sweep, which removes it from the store."""
    if stored is not None and stored.state in {StoredObject.State.PENDING, StoredObject.State.LIVE}:
        stored.state = StoredObject.State.DISCARDED
        stored.save(update_fields=["state"])


def _checksum(info: objectstore.ObjectInfo) -> str:
    if info.sha256:
        try:
            return "sha256:" + base64.b64decode(info.sha256).hex()
        except (binascii.Error, ValueError):
            pass
    return f"etag:{info.etag}"


@dataclass(frozen=True)
class _Verified:
    size: int
    checksum: str
    sniffed_type: str | None


def _verify(stored: StoredObject) -> _Verified | ApiError:
    """Read what the store really holds: its size (HEAD) and its type (first bytes).

    Raises ObjectNotFound when no bytes have arrived (nothing changes: the client may still
    PUT them); returns the refusal when the bytes arrived but are not what was declared.
    """
    info = objectstore.head(stored.storage_key)
    if info is None:
        raise ObjectNotFound(
            "No bytes have been stored for this upload yet: PUT them to upload.url first."
        )
    if info.size != stored.declared_size:
        return UploadSizeMismatch(
            f"The stored object has {info.size} bytes; {stored.declared_size} were declared.",
            details={"declaredSize": stored.declared_size, "actualSize": info.size},
        )
    sniffed = sniff(objectstore.read_prefix(stored.storage_key, min(SNIFF_BYTES, info.size)))
    if contradicts(stored.declared_type, sniffed):
        return ContentTypeMismatch(
            f"The stored bytes are {sniffed.best}, not the declared {stored.declared_type}.",
            details={"declaredType": stored.declared_type, "detectedType": sniffed.best},
        )
    return _Verified(
        size=info.size,
        checksum=_checksum(info),
        sniffed_type=recorded_type(stored.declared_type, sniffed),
    )


def _publish(file: File, stored: StoredObject, verified: _Verified, *, version: int) -> None:
    """Make verified bytes the file's current version, with the FileVersion that keeps them."""
    stored.state = StoredObject.State.LIVE
    stored.size = verified.size
    stored.checksum = verified.checksum
    stored.sniffed_type = verified.sniffed_type
    stored.save(update_fields=["state", "size", "checksum", "sniffed_type"])
    file.status = Status.UPLOADED
    file.version = version
    file.current_object = stored
    file.content_type = stored.declared_type
    file.size = verified.size
    file.checksum = verified.checksum
    file.sniffed_type = verified.sniffed_type
    file.uploaded_at = timezone.now()
    file.save()
    FileVersion.objects.create(
        file=file,
        version=version,
        stored_object=stored,
        content_type=file.content_type,
        size=verified.size,
        checksum=verified.checksum,
    )


def _check_single_put_size(size: int) -> None:
    limit = settings.SERVICE_MAX_SINGLE_UPLOAD_BYTES
    if size > limit:
        raise FileTooLarge(
            f"A single upload is at most {limit} bytes; use a multipart upload for larger files.",
            details={"maxSize": limit},
        )


# --- Single upload -------------------------------------------------------------------------


def file_upload_start(
    *,
    project: Project,
    filename: str,
    content_type: str,
    size: int,
    path: str | None = None,
    metadata: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str = "",
) -> StartedUpload:
    """Create a pending file and presign the PUT of its bytes.

    1. Refuse sizes above the single-PUT limit (413; larger files use multipart).
    2. With an Idempotency-Key: serialize requests with that key (advisory lock), and replay
       the first request's file and upload descriptor if the body is the same; a different
       body under the same key is refused.
    3. Otherwise create the stored object and the file, record ``file.created``.
    """
    _check_single_put_size(size)
    with transaction.atomic():
        if idempotency_key is not None:
            replay = _idempotent_replay(project, idempotency_key, request_hash)
            if replay is not None:
                return replay
        stored = _new_object(project, content_type=content_type, size=size)
        file = File.objects.create(
            project=project,
            filename=filename,
            path=path,
            content_type=content_type,
            size=size,
            metadata=metadata,
            current_object=stored,
        )
        upload = _presign_upload(stored)
        if idempotency_key is not None:
            IdempotencyRecord.objects.create(
                project=project,
                key=idempotency_key,
                request_hash=request_hash,
                file=file,
                response_body={
                    "url": upload.url,
                    "method": upload.method,
                    "headers": upload.headers,
                    "expiresAt": upload.expires_at.isoformat(),
                },
            )
        record_file_event(Event.Type.FILE_CREATED, file)
    return StartedUpload(file=file, upload=upload)


def _idempotent_replay(project: Project, key: str, request_hash: str) -> StartedUpload | None:
    # Two requests with one key must not both create a file: the advisory lock (released at
    # commit) makes the second wait for the first and then find its record.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"{project.id}:{key}"]
        )
    cutoff = timezone.now() - timedelta(hours=settings.SERVICE_IDEMPOTENCY_TTL_HOURS)
    record = IdempotencyRecord.objects.filter(project=project, key=key).first()
    if record is None:
        return None
    if record.created_at < cutoff:
        record.delete()  # keys are remembered for a day, then may be reused
        return None
    if record.request_hash != request_hash:
        raise IdempotencyKeyReused(
            "This Idempotency-Key was already used with a different request body.",
            details={"idempotencyKey": key},
        )
    file = File.objects.get(id=record.file_id)
    saved = record.response_body
    upload = objectstore.PresignedUpload(
        url=saved["url"],
        method=saved["method"],
        headers=saved["headers"],
        expires_at=datetime.fromisoformat(saved["expiresAt"]),
    )
    return StartedUpload(file=file, upload=upload, replayed=True)


def file_complete(*, project: Project, file_id: str) -> File:
    """Verify the uploaded bytes and publish version 1.

    1. Lock the file; only a pending file can complete (409 FILE_NOT_PENDING).
    2. Read the stored object's real size and type. No bytes yet: 409 OBJECT_NOT_FOUND and
       nothing changes. Bytes of another size or a contradicting type: the file becomes
       ``failed`` (the presigned PUT cannot overwrite them, so they can never become right)
       and the answer says why.
    3. Otherwise the file becomes ``uploaded`` with its checksum; ``file.uploaded``.
    """
    with transaction.atomic():
        file = _lock_file(project, file_id)
        if file.status != Status.PENDING:
            raise FileNotPending(f"The file is {file.status}; only a pending file can complete.")
        stored = file.current_object
        verified = _verify(stored)
        if isinstance(verified, ApiError):
            file.status = Status.FAILED
            file.save(update_fields=["status", "updated_at"])
            _discard(stored)
            refusal: ApiError | None = verified
        else:
            refusal = None
            _publish(file, stored, verified, version=1)
            record_file_event(Event.Type.FILE_UPLOADED, file, checksum=file.checksum)
    if refusal is not None:
        raise refusal  # after the commit, so the file's failed state is kept
    return file


# --- Changes to an uploaded file -----------------------------------------------------------


def file_update(*, project: Project, file_id: str, changes: dict[str, Any]) -> File:
    """Rename, move and/or replace metadata; one event per kind of change that happened."""
    with transaction.atomic():
        file = _lock_file(project, file_id)
        previous_filename, previous_path = file.filename, file.path
        changed: list[str] = []
        if "filename" in changes and changes["filename"] != file.filename:
            file.filename = changes["filename"]
            changed.append("filename")
        if "path" in changes and changes["path"] != file.path:
            file.path = changes["path"]
            changed.append("path")
        if "metadata" in changes and changes["metadata"] != file.metadata:
            file.metadata = changes["metadata"]
            changed.append("metadata")
        if not changed:
            return file
        file.save(update_fields=[*changed, "updated_at"])
        if "filename" in changed:
            record_file_event(Event.Type.FILE_RENAMED, file, previousFilename=previous_filename)
        if "path" in changed:
            record_file_event(Event.Type.FILE_MOVED, file, previousPath=previous_path)
        if "metadata" in changed:
            record_file_event(Event.Type.FILE_METADATA_UPDATED, file, metadata=file.metadata)
        return file


def file_copy(
    *, project: Project, file_id: str, filename: str | None = None, path: Any = ...
) -> File:
    """A new file sharing the source's current stored object: no byte is copied.

    ``path`` left out keeps the source's folder; ``None`` means the root.
    """
    with transaction.atomic():
        source = _lock_file(project, file_id)
        if source.status != Status.UPLOADED:
            raise FileNotUploaded(
                f"The file is {source.status}; only an uploaded file can be copied."
            )
        now = timezone.now()
        copy = File.objects.create(
            project=project,
            filename=filename if filename is not None else source.filename,
            path=source.path if path is ... else path,
            content_type=source.content_type,
            size=source.size,
            status=Status.UPLOADED,
            metadata=source.metadata,
            checksum=source.checksum,
            sniffed_type=source.sniffed_type,
            current_object=source.current_object,
            uploaded_at=now,
        )
        FileVersion.objects.create(
            file=copy,
            version=1,
            stored_object=source.current_object,
            content_type=copy.content_type,
            size=copy.size,
            checksum=copy.checksum or "",
        )
        record_file_event(
            Event.Type.FILE_COPIED, copy, sourceFileId=source.id, sourceVersion=source.version
        )
        return copy


def file_download_url(
    *, project: Project, file_id: str, expires_in: int = 3600
) -> objectstore.PresignedDownload:
    with transaction.atomic():
        file = _lock_file(project, file_id)
        if file.status != Status.UPLOADED:
            raise FileNotUploaded(
                f"The file is {file.status}; only an uploaded file can be downloaded."
            )
        download = objectstore.presign_get(
            key=file.current_object.storage_key,
            expires_in=expires_in,
            filename=file.filename,
            content_type=file.content_type,
        )
        record_file_event(Event.Type.FILE_DOWNLOADED, file, expiresAt=iso(download.expires_at))
        return download


# --- Replacement ---------------------------------------------------------------------------


def file_replace_start(
    *, project: Project, file_id: str, content_type: str, size: int
) -> StartedUpload:
    """Presign the PUT of a new version; the file keeps serving its current one meanwhile.

    A replacement whose upload URL has expired no longer blocks a new one (the client could
    not finish it anyway); one still within its URL lifetime does (409 REPLACE_IN_PROGRESS).
    """
    _check_single_put_size(size)
    with transaction.atomic():
        file = _lock_file(project, file_id)
        if file.status != Status.UPLOADED:
            raise FileNotUploaded(
                f"The file is {file.status}; only an uploaded file can be replaced."
            )
        pending = file.replacement_object
        if pending is not None:
            if pending.upload_expires_at and pending.upload_expires_at > timezone.now():
                raise ReplaceInProgress(
                    "A replacement is already pending for this file; complete it first.",
                    details={"expiresAt": iso(pending.upload_expires_at)},
                )
            _discard(pending)
        stored = _new_object(project, content_type=content_type, size=size)
        file.replacement_object = stored
        file.save(update_fields=["replacement_object", "updated_at"])
        return StartedUpload(file=file, upload=_presign_upload(stored))


def file_replace_complete(*, project: Project, file_id: str) -> File:
    """Verify the replacement's bytes and publish them as version N+1.

    The previous version's object is kept (its FileVersion row still points at it). Bytes of
    another size or a contradicting type cancel the replacement (the client starts another).
    """
    with transaction.atomic():
        file = _lock_file(project, file_id)
        stored = file.replacement_object
        if stored is None:
            raise NoReplaceInProgress("No replacement is pending for this file.")
        verified = _verify(stored)
        if isinstance(verified, ApiError):
            file.replacement_object = None
            file.save(update_fields=["replacement_object", "updated_at"])
            _discard(stored)
            refusal: ApiError | None = verified
        else:
            refusal = None
            previous_version = file.version
            file.replacement_object = None
            _publish(file, stored, verified, version=previous_version + 1)
            record_file_event(
                Event.Type.FILE_REPLACED,
                file,
                previousVersion=previous_version,
                checksum=file.checksum,
            )
    if refusal is not None:
        raise refusal
    return file


# --- Delete, restore, purge ----------------------------------------------------------------


def file_delete(*, project: Project, file_id: str) -> File:
    """Soft delete: the bytes stay for the grace window; a pending replacement is dropped."""
    with transaction.atomic():
        file = _lock_file(project, file_id)
        now = timezone.now()
        file.status_before_delete = file.status
        file.status = Status.DELETED
        file.deleted_at = now
        _discard(file.replacement_object)
        file.replacement_object = None
        file.save(
            update_fields=[
                "status",
                "status_before_delete",
                "deleted_at",
                "replacement_object",
                "updated_at",
            ]
        )
        purge_after = now + timedelta(days=settings.SERVICE_DELETE_GRACE_DAYS)
        record_file_event(
            Event.Type.FILE_DELETED, file, deletedAt=iso(now), purgeAfter=iso(purge_after)
        )
        return file


def file_restore(*, project: Project, file_id: str) -> File:
    """Bring a soft-deleted file back, as long as its bytes have not been purged."""
    with transaction.atomic():
        file = _lock_file(project, file_id, include_deleted=True)
        if file.status != Status.DELETED:
            raise FileNotDeleted(f"The file is {file.status}, not deleted.")
        if file.purged_at is not None or file.current_object.state == StoredObject.State.PURGED:
            raise ObjectNotFound("The file's stored object has been purged; it cannot be restored.")
        restored_status = file.status_before_delete or Status.UPLOADED
        if (
            restored_status == Status.UPLOADED
            and objectstore.head(file.current_object.storage_key) is None
        ):
            raise ObjectNotFound("The file's stored object no longer exists in the store.")
        file.status = restored_status
        file.deleted_at = None
        file.status_before_delete = ""
        file.save(update_fields=["status", "deleted_at", "status_before_delete", "updated_at"])
        record_file_event(Event.Type.FILE_RESTORED, file)
        return file


@dataclass
class PurgeReport:
    files: list[str]
    objects_removed: int = 0
    dry_run: bool = False


def files_purge_expired(
    *, grace_days: int | None = None, dry_run: bool = False, now: datetime | None = None
) -> PurgeReport:
    """The purge sweep; safe to run twice and from several processes at once.

    1. Each deleted file past the grace window is marked purged in its own transaction
       (``SKIP LOCKED``: a file another sweep holds is left to it), with ``file.purged``.
    2. Each object of that file (every version, the pending one) is discarded unless a file
       that is not purged still uses it: a copy, or a file still within its grace window.
       The object row is locked first so two files sharing it, purged at once, cannot both
       think the other still needs it.
    3. Discarded objects are removed from the store, then marked purged.
    """
    grace = settings.SERVICE_DELETE_GRACE_DAYS if grace_days is None else grace_days
    cutoff = (now or timezone.now()) - timedelta(days=grace)
    due = File.objects.filter(status=Status.DELETED, purged_at__isnull=True, deleted_at__lte=cutoff)
    if dry_run:
        return PurgeReport(
            files=list(due.order_by("deleted_at").values_list("id", flat=True)), dry_run=True
        )
    purged: list[str] = []
    while True:
        batch = list(
            due.order_by("deleted_at").values_list("id", flat=True)[
                : settings.SERVICE_PURGE_BATCH_SIZE
            ]
        )
        progressed = False
        for file_id in batch:
            if _purge_one(file_id, cutoff):
                purged.append(file_id)
                progressed = True
        if len(batch) < settings.SERVICE_PURGE_BATCH_SIZE or not progressed:
            break
    removed = objects_remove_discarded()
    return PurgeReport(files=purged, objects_removed=removed)


def _purge_one(file_id: str, cutoff: datetime) -> bool:
    with transaction.atomic():
        file = (
            File.objects.select_for_update(skip_locked=True)
            .select_related("project")
            .filter(
                id=file_id, status=Status.DELETED, purged_at__isnull=True, deleted_at__lte=cutoff
            )
            .first()
        )
        if file is None:
            return False
        file.purged_at = timezone.now()
        file.save(update_fields=["purged_at"])
        object_ids = set(file.versions.values_list("stored_object_id", flat=True))
        object_ids.add(file.current_object_id)
        if file.replacement_object_id:
            object_ids.add(file.replacement_object_id)
        for stored in (
            StoredObject.objects.select_for_update().filter(id__in=object_ids).order_by("id")
        ):
            still_used = (
                FileVersion.objects.filter(
                    stored_object=stored, file__purged_at__isnull=True
                ).exists()
                or File.objects.filter(
                    Q(current_object=stored) | Q(replacement_object=stored), purged_at__isnull=True
                ).exists()
            )
            if not still_used:
                _discard(stored)
        record_file_event(Event.Type.FILE_PURGED, file, purgedAt=iso(file.purged_at))
        return True


def objects_remove_discarded(*, limit: int = 1000) -> int:
    """Remove discarded objects from the store, then mark them purged. Returns how many."""
    removed = 0
    while True:
        with transaction.atomic():
            batch = list(
                StoredObject.objects.select_for_update(skip_locked=True)
                .filter(state=StoredObject.State.DISCARDED)
                .order_by("id")[:limit]
            )
            if not batch:
                return removed
            # Store first, then the rows: if the store fails, the rows stay discarded and the
            # next sweep tries again; a delete of an absent key succeeds.
            objectstore.delete([stored.storage_key for stored in batch])
            StoredObject.objects.filter(id__in=[s.id for s in batch]).update(
                state=StoredObject.State.PURGED, purged_at=timezone.now()
            )
            removed += len(batch)
        if len(batch) < limit:
            return removed


def files_expire_pending(*, now: datetime | None = None) -> int:
    """Mark single uploads whose bytes never arrived as failed, and drop stale replacements."""
    cutoff = (now or timezone.now()) - timedelta(hours=settings.SERVICE_PENDING_UPLOAD_EXPIRY_HOURS)
    expired = 0
    with transaction.atomic():
        stale = list(
            File.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("current_object")
            .filter(status=Status.PENDING, current_object__upload_expires_at__lt=cutoff)[:1000]
        )
        for file in stale:
            file.status = Status.FAILED
            file.save(update_fields=["status", "updated_at"])
            _discard(file.current_object)
            expired += 1
        stale_replacements = list(
            File.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("replacement_object")
            .filter(replacement_object__upload_expires_at__lt=cutoff)[:1000]
        )
        for file in stale_replacements:
            _discard(file.replacement_object)
            file.replacement_object = None
            file.save(update_fields=["replacement_object", "updated_at"])
    # Idempotency keys are remembered for a day; older records only take space.
    IdempotencyRecord.objects.filter(
        created_at__lt=timezone.now() - timedelta(hours=settings.SERVICE_IDEMPOTENCY_TTL_HOURS)
    ).delete()
    return expired
