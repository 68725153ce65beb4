"""Single uploads: start (with Idempotency-Key) and complete."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime
from typing import Any

import psycopg
from django.db import IntegrityError, connection, transaction

from accounts.selectors import key_active_sql
from accounts.tenancy import Tenant
from files import hooks
from files.events import record_file_event, record_file_event_with_change
from files.models import File
from files.services.common import (
    StartedUpload,
    Status,
    check_single_put_size,
    discard,
    lock_file,
    new_object,
    presign_upload,
    publish,
    read_file,
    verify,
)
from files.services.idempotency import SINGLE, idempotency_claim, idempotency_remember
from storage_service import objectstore
from storage_service.errors import (
    ApiError,
    FileNotPending,
)
from storage_service.fastfetch import insert_sql
from webhooks.models import Event
from webhooks.services import ChangeSql

# --- Single upload -------------------------------------------------------------------------


def file_upload_start(
    *,
    tenant: Tenant,
    filename: str,
    content_type: str,
    size: int,
    path: str | None = None,
    metadata: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    request_hash: str = "",
    active_key_hash: str | None = None,
) -> StartedUpload:
    """Create a pending file and presign the PUT of its bytes.

    ``active_key_hash`` (without an Idempotency-Key only): write nothing, and raise
    KeyNotActive, unless the key with this hash is still active when the write runs.

    1. Refuse sizes above the single-PUT limit (413; larger files use multipart).
    2. With an Idempotency-Key: serialize requests with that key (advisory lock), and replay
       the first request's file and upload descriptor if the body is the same; a different
       body under the same key is refused.
    3. Otherwise create the stored object and the file, record ``file.created``.
    """
    check_single_put_size(size)
    if idempotency_key is None:
        return _upload_start_one_statement(
            tenant=tenant,
            filename=filename,
            content_type=content_type,
            size=size,
            path=path,
            metadata=metadata,
            active_key_hash=active_key_hash,
        )
    with transaction.atomic():
        replay = _idempotent_replay(tenant, idempotency_key, request_hash)
        if replay is not None:
            return replay
        stored = new_object(tenant, content_type=content_type, size=size)
        file = File.objects.create(
            **tenant.owner(),
            filename=filename,
            path=path,
            content_type=content_type,
            size=size,
            metadata=metadata,
            current_object=stored,
        )
        upload = presign_upload(stored)
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


class KeyNotActive(Exception):
    """The key an upload start was made for was revoked before its statement ran: nothing
    was written."""


def _upload_start_one_statement(
    *,
    tenant: Tenant,
    filename: str,
    content_type: str,
    size: int,
    path: str | None,
    metadata: dict[str, Any] | None,
    active_key_hash: str | None = None,
) -> StartedUpload:
    """The commonest upload start (no Idempotency-Key) in ONE statement: the
    stored object's and the file's INSERTs (as the ORM's ``create`` would send them) as CTEs
    of the ``file.created`` event's statement. A single statement commits or fails as a
    whole, so the change and its event still commit together, with neither BEGIN nor COMMIT:
    one round trip instead of five.

    ``active_key_hash``: the statement also checks that this key is still active (the stored
    object takes its project from the key's row, NULL once revoked, which its NOT NULL
    refuses), so a caller that knows the key from an earlier request needs no lookup of its
    own; KeyNotActive when it was revoked."""
    stored = new_object(tenant, content_type=content_type, size=size, save=False)
    file = File(
        **tenant.owner(),
        filename=filename,
        path=path,
        content_type=content_type,
        size=size,
        metadata=metadata,
        current_object=stored,
    )
    active, active_params, checked = "", [], {}
    if active_key_hash is not None:
        active, active_params = (
            f"active AS (SELECT {key_active_sql()} AS project_id), ",
            [active_key_hash],
        )
        checked = {"project_id": "(SELECT project_id FROM active)"}
    stored_sql, stored_params = insert_sql(stored, expressions=checked, returning="id")
    file_sql, file_params = insert_sql(
        file, expressions={"current_object_id": "(SELECT id FROM stored)"}
    )
    change = ChangeSql(
        ctes=f"{active}stored AS ({stored_sql}), file AS ({file_sql}), ",
        params=[*active_params, *stored_params, *file_params],
        returning=("(SELECT id FROM stored)",),
    )
    # Inside a transaction (a caller's, or a test's) a refused statement would abort it: a
    # savepoint keeps it usable. Outside one, the statement is its own transaction.
    guard = transaction.atomic() if checked and connection.in_atomic_block else nullcontext()
    try:
        with guard:
            _, (stored.id,) = record_file_event_with_change(Event.Type.FILE_CREATED, file, change)
    except IntegrityError as exc:
        if checked and _refused_project(exc.__cause__):
            raise KeyNotActive from exc
        raise
    file.current_object = stored  # now with its id
    return StartedUpload(file=file, upload=presign_upload(stored))


def _refused_project(error: BaseException | None) -> bool:
    """The stored object's project refused as NULL: the ``active`` key was not."""
    return (
        isinstance(error, psycopg.errors.NotNullViolation)
        and error.diag.table_name == "files_storedobject"
        and error.diag.column_name == "project_id"
    )


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


def file_complete(*, tenant: Tenant, file_id: str) -> File:
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
    _check_completable(file)
    stored = file.current_object
    # The store's answers, with no row locked: a slow store holds no lock.
    verified = verify(stored)
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
