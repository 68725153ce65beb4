"""Single uploads: start (with Idempotency-Key) and complete."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime
from typing import Any

import psycopg
from django.db import IntegrityError, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.sql import InsertQuery

from accounts.tenancy import Tenant
from events.models import Event
from events.services import ChangeSql
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
) -> StartedUpload:
    """Create a pending file and presign the PUT of its bytes.

    1. Refuse sizes above the single-PUT limit (413; larger files use multipart), and what
       the tenant's limits refuse (413, 422); under a storage limit, reserve the size (403
       when it does not fit) in the transaction that inserts the pending object.
    2. With an Idempotency-Key: serialize requests with that key (advisory lock), and replay
       the first request's file and upload descriptor if the body is the same; a different
       body under the same key is refused.
    3. Otherwise create the stored object and the file, record ``file.created``.
    """
    check_single_put_size(size)
    if idempotency_key is None:
        arguments: dict[str, Any] = {
            "tenant": tenant,
            "filename": filename,
            "content_type": content_type,
            "size": size,
            "path": path,
            "metadata": metadata,
            "expires_at": expires_at,
        }
        try:
            # Most tenants have no limits: the statement itself checks that, at no extra
            # round trip, and refuses (writing nothing) for a tenant that has some.
            return _upload_start_one_statement(**arguments, unlimited_only=True)
        except TenantLimited:
            pass
        limits = limits_check(tenant=tenant, content_type=content_type, size=size)
        # A tenant with a storage limit reserves in the statement's own transaction.
        reserving = limits is not None and limits.max_storage_bytes is not None
        with transaction.atomic() if reserving else nullcontext():
            storage_reserve(tenant=tenant, limits=limits, size=size)
            return _upload_start_one_statement(**arguments)
    limits = limits_check(tenant=tenant, content_type=content_type, size=size)
    with transaction.atomic():
        replay = _idempotent_replay(tenant, idempotency_key, request_hash)
        if replay is not None:
            return replay
        storage_reserve(tenant=tenant, limits=limits, size=size)
        stored = new_object(tenant, content_type=content_type, size=size)
        file = File.objects.create(
            **tenant.owner(),
            filename=filename,
            path=path,
            content_type=content_type,
            size=size,
            metadata=metadata,
            expires_at=expires_at,
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


class TenantLimited(Exception):
    """The tenant has limits, which an ``unlimited_only`` statement does not check: nothing
    was written."""


def _upload_start_one_statement(
    *,
    tenant: Tenant,
    filename: str,
    content_type: str,
    size: int,
    path: str | None,
    metadata: dict[str, Any] | None,
    expires_at: datetime | None = None,
    unlimited_only: bool = False,
) -> StartedUpload:
    """An upload start without an Idempotency-Key in ONE statement: the stored object's and
    the file's INSERTs (as the ORM's ``create`` would send them) as CTEs of the
    ``file.created`` event's statement. A single statement commits or fails as a whole, so
    the change and its event still commit together, with neither BEGIN nor COMMIT: one round
    trip instead of five.

    ``unlimited_only``: the statement also checks that the tenant has no limits row (the
    stored object takes its declared type from a CTE that is empty when it has one, which its
    NOT NULL refuses); TenantLimited when it has, for the caller to check them first."""
    stored = new_object(tenant, content_type=content_type, size=size, save=False)
    file = File(
        **tenant.owner(),
        filename=filename,
        path=path,
        content_type=content_type,
        size=size,
        metadata=metadata,
        expires_at=expires_at,
        current_object=stored,
    )
    unlimited, unlimited_params, checked = "", [], {}
    if unlimited_only:
        unlimited = (
            "unlimited AS (SELECT %s::varchar AS declared_type WHERE NOT EXISTS ("
            "SELECT 1 FROM accounts_projectlimits WHERE project_id = %s AND mode = %s)), "
        )
        unlimited_params = [content_type, tenant.project_id, tenant.mode]
        checked = {"declared_type": "(SELECT declared_type FROM unlimited)"}
    # The connection itself, looked up once: each attribute read through the ``connection``
    # proxy looks it up again, and preparing the values reads a dozen.
    db = transaction.get_connection()
    stored_sql, stored_params = _insert_sql(stored, db, expressions=checked, returning="id")
    file_sql, file_params = _insert_sql(
        file, db, expressions={"current_object_id": "(SELECT id FROM stored)"}
    )
    change = ChangeSql(
        ctes=f"{unlimited}stored AS ({stored_sql}), file AS ({file_sql}), ",
        params=[*unlimited_params, *stored_params, *file_params],
        returning=("(SELECT id FROM stored)",),
    )
    # Inside a transaction (a caller's, or a test's) a refused statement would abort it: a
    # savepoint keeps it usable. Outside one, the statement is its own transaction.
    guard = transaction.atomic() if checked and db.in_atomic_block else nullcontext()
    try:
        with guard:
            (stored.id,) = record_file_event_with_change(Event.Type.FILE_CREATED, file, change)
    except IntegrityError as exc:
        if unlimited_only and _refused_column(exc.__cause__, "declared_type"):
            raise TenantLimited from exc
        raise
    file.current_object = stored  # now with its id
    return StartedUpload(file=file, upload=presign_upload(stored))


def _insert_sql(
    obj: Model,
    db: BaseDatabaseWrapper,
    *,
    expressions: dict[str, str] | None = None,
    returning: str | None = None,
) -> tuple[str, list[Any]]:
    """The ``INSERT`` of a new ``obj`` as the ORM's ``save()`` sends it (Django's insert
    compiler: each field's ``pre_save`` and ``get_db_prep_save``), for sending on ``db`` as
    part of a larger statement. ``expressions`` puts SQL in place of some attributes' values;
    ``returning`` names a column to return. The instance is marked saved: the caller must
    send it.

    The statement's text depends only on its shape (the model, the fields given a value, the
    expressions, the returned column), so the insert compiler builds it once per shape; each
    call only prepares the values, as the compiler does."""
    expressions = expressions or {}
    returned = obj._meta.db_returning_fields
    shape = (
        type(obj),
        tuple(field.attname for field in returned if getattr(obj, field.attname) is None),
        tuple(sorted(expressions.items())),
        returning,
    )
    known = _insert_statements.get(shape)
    if known is None:
        known = _insert_statements[shape] = _insert_statement(obj, db, expressions, returning)
    sql, valued = known
    params = []
    for field, null_kept in valued:
        value = field.pre_save(obj, True)
        params.append(None if value is None and null_kept else field.get_db_prep_save(value, db))
    obj._state.adding, obj._state.db = False, db.alias
    return sql, params


_insert_statements: dict[tuple[Any, ...], tuple[str, list[tuple[Field[Any, Any], bool]]]] = {}


def _insert_statement(
    obj: Model, db: BaseDatabaseWrapper, expressions: dict[str, str], returning: str | None
) -> tuple[str, list[tuple[Field[Any, Any], bool]]]:
    """The text of ``obj``'s INSERT, by Django's insert compiler, and the fields whose values
    its placeholders take, in order, each with whether it prepares None as None (SQL NULL):
    a pending upload leaves about half its columns None, whose preparation is then skipped."""
    returned = obj._meta.db_returning_fields
    fields = [
        field
        for field in obj._meta.local_concrete_fields
        if not (field in returned and getattr(obj, field.attname) is None)
    ]
    valued = [field for field in fields if field.attname not in expressions]
    query = InsertQuery(type(obj))
    query.insert_values(valued, [obj])
    [(compiled, _)] = query.get_compiler(connection=db).as_sql()
    # Every value of these models is a plain placeholder; anything else would need its own.
    if not compiled.endswith(f"VALUES ({', '.join(['%s'] * len(valued))})"):
        raise ValueError(f"unexpected placeholders in {compiled!r}")
    table = db.ops.quote_name(obj._meta.db_table)
    names = ", ".join(db.ops.quote_name(field.column) for field in fields)
    placeholders = ", ".join(expressions.get(field.attname, "%s") for field in fields)
    sql = f"INSERT INTO {table} ({names}) VALUES ({placeholders})"
    if returning is not None:
        sql += f" RETURNING {db.ops.quote_name(returning)}"
    return sql, [(field, field.get_db_prep_save(None, db) is None) for field in valued]


def _refused_column(error: BaseException | None, column: str) -> bool:
    """The stored object's ``column`` refused as NULL: its declared type when the tenant was
    not ``unlimited``."""
    return (
        isinstance(error, psycopg.errors.NotNullViolation)
        and error.diag.table_name == "files_storedobject"
        and error.diag.column_name == column
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
