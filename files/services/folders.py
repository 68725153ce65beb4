"""Folder operations: move (rename), delete and restore every file at or below a path.

Paths are logical and storage keys never change, so no byte moves: each operation is a job
(files/services/jobs.py) that changes file rows in batches. Starting one checks what can be
checked at once (the folder exists, the resulting paths fit, the tenant's running-jobs cap),
then records the job and hands it to the workers.

Each operation is also a batch here: one SQL statement that takes the next files in creation
order (``created_at``, then id) after the job's cursor, locks them, changes them exactly as the
single-file endpoint would (``PATCH`` of the path, ``DELETE``, ``…/restore``) and writes each
one's event, with the job's id, through webhooks' outbox (``events_record_rows``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.tenancy import Tenant
from files.models import Job
from files.validation import MAX_PATH_BYTES
from storage_service.celery import app
from storage_service.errors import FolderNotFound, RateLimited, ValidationError
from storage_service.timefmt import iso
from webhooks.models import Event
from webhooks.services import ChangeSql, events_record_rows

logger = logging.getLogger(__name__)

# Sent by name: files/tasks.py calls these services, so they never import it.
RUN_JOB_TASK = "files.tasks.run_job"
# Seconds a client is asked to wait when the tenant has its cap of jobs running.
JOB_CAP_RETRY_AFTER = 5


def job_enqueue(job_id: str) -> None:
    """Send a job's run; never raise (the job sweep sends what a lost message would have)."""
    try:
        app.send_task(RUN_JOB_TASK, args=(job_id,), retry=False)
    except Exception:
        logger.warning("could not enqueue job %s; the sweep will", job_id)


def like_below(path: str) -> str:
    """The LIKE pattern of every path strictly below ``path`` (``path/…``)."""
    escaped = path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "/%"


# --- Starting an operation -----------------------------------------------------------------


def folder_move(*, tenant: Tenant, source: str, target: str | None) -> Job:
    """Start moving every file that is not deleted at or below ``source`` to the same place
    under ``target`` (None: the root). 202 with the job; the request's own checks (a root
    ``from``, ``to`` at or below ``from``) are the serializer's.

    1. The longest path under ``source`` decides whether every resulting path fits the
       limits: 400 if not, 404 FOLDER_NOT_FOUND if there is no file at all.
    2. The job, within the tenant's cap (``_create_job``).
    """
    longest = _longest_path(tenant, source)
    if longest is None:
        raise FolderNotFound(f"No file is in folder {source!r} or below it.")
    chars, octets = longest
    if target is None:
        # A file directly in ``source`` lands at the root (path null).
        chars, octets = chars - len(source) - 1, octets - _octets(source) - 1
    else:
        chars, octets = (
            chars - len(source) + len(target),
            octets - _octets(source) + _octets(target),
        )
    limit = settings.SERVICE_MAX_PATH_LENGTH
    if chars > limit or octets > MAX_PATH_BYTES:
        raise ValidationError(
            "A file's path would be too long after the move.",
            details={
                "to": [
                    f"The longest resulting path would have {chars} characters "
                    f"({octets} bytes as UTF-8); at most {limit} characters and "
                    f"{MAX_PATH_BYTES} bytes."
                ]
            },
        )
    return _create_job(tenant, Job.Type.FOLDER_MOVE, {"from": source, "to": target})


def folder_delete(*, tenant: Tenant, path: str) -> Job:
    """Start soft-deleting every file at or below ``path``, as ``DELETE`` would."""
    if _longest_path(tenant, path) is None:
        raise FolderNotFound(f"No file is in folder {path!r} or below it.")
    return _create_job(tenant, Job.Type.FOLDER_DELETE, {"path": path})


def folder_restore(*, tenant: Tenant, path: str) -> Job:
    """Start restoring every deleted, restorable file at or below ``path``."""
    query = (
        "SELECT 1 FROM files_file AS f JOIN files_storedobject AS o ON o.id = f.current_object_id"
        f" WHERE {_RESTORABLE} LIMIT 1"
    )
    with connection.cursor() as cursor:
        cursor.execute(query, [tenant.project_id, tenant.mode, path, like_below(path)])
        found = cursor.fetchone() is not None
    if not found:
        raise FolderNotFound(f"No deleted file that can be restored is in folder {path!r}.")
    return _create_job(tenant, Job.Type.FOLDER_RESTORE, {"path": path})


def _octets(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _longest_path(tenant: Tenant, path: str) -> tuple[int, int] | None:
    """The longest path (characters, bytes) of the files not deleted at or below ``path``;
    None when there are none. Served by file_path_prefix."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT max(char_length(path)), max(octet_length(path)) FROM files_file"
            " WHERE project_id = %s AND mode = %s AND status <> 'deleted'"
            " AND (path = %s OR path LIKE %s)",
            [tenant.project_id, tenant.mode, path, like_below(path)],
        )
        chars, octets = cursor.fetchone()
    return None if chars is None else (int(chars), int(octets))


def _create_job(tenant: Tenant, type: Job.Type, params: dict[str, Any]) -> Job:
    """The job row, and its message after commit.

    The tenant's jobs are counted under a transaction-scoped advisory lock on the tenant, so
    two requests at once cannot both take the last place under the cap.
    """
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"jobs:{tenant.project_id}:{tenant.mode}"],
            )
        cap = settings.SERVICE_JOB_MAX_ACTIVE_PER_PROJECT
        if Job.objects.for_tenant(tenant).active().count() >= cap:
            raise RateLimited(
                f"At most {cap} jobs may be pending or running at once; retry when one ends.",
                retry_after=JOB_CAP_RETRY_AFTER,
                details={"maxActiveJobs": cap},
            )
        job = Job.objects.create(**tenant.owner(), type=type, params=params)
        transaction.on_commit(lambda: job_enqueue(job.id))
    return job


# --- One batch of an operation -------------------------------------------------------------

# The columns every file event's data is built from (files/events.py's file_event_data).
_CHANGED = (
    "f.id, f.filename, f.path, f.content_type, f.size, f.version, f.status, f.upload_token_id"
)
_FILE_DATA = (
    "jsonb_build_object('fileId', r.id, 'filename', r.filename, 'path', r.path,"
    " 'contentType', r.content_type, 'size', r.size, 'version', r.version,"
    " 'status', r.status, 'uploadTokenId', r.upload_token_id, 'jobId', %s::text)"
)
_IN_FOLDER = "(f.path = %s OR f.path LIKE %s)"
_NOT_DELETED = f"f.project_id = %s AND f.mode = %s AND f.status <> 'deleted' AND {_IN_FOLDER}"
# Deleted files whose bytes are still there (file_restore's _check_restorable).
_RESTORABLE = (
    "f.project_id = %s AND f.mode = %s AND f.status = 'deleted' AND f.purged_at IS NULL"
    " AND o.state <> 'purged' AND (f.path = %s OR f.path LIKE %s)"
)


@dataclass(frozen=True)
class Batch:
    count: int  # files changed
    last_id: str | None  # the last file changed, in the batches' order (the job's next cursor)


# A batch walks the tenant's files in creation order, (created_at, id), after the file the job's
# cursor names: the tenant's own list index (file_list_created, or file_list_status for the
# trash) serves that order backwards, so a job reads its tenant's rows only, never the rows
# of every tenant that an order by id alone would walk through.
_ORDER = "ORDER BY f.created_at, f.id"
_LAST = "(SELECT id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1)"


def _after(after: str) -> tuple[str, list[Any]]:
    """The condition "after the cursor's file" and its params; none at the start."""
    if not after:
        return "", []
    return (
        "AND (f.created_at, f.id) > (SELECT created_at, id FROM files_file WHERE id = %s)",
        [after],
    )


def _moved_path_sql(target: str | None) -> tuple[str, list[Any]]:
    """SQL (over ``files_file``'s ``path``) of a file's path after the move, and its params:
    ``source`` itself becomes ``target``; ``source/rest`` becomes ``target/rest``."""
    if target is None:
        return "CASE WHEN path = %s THEN NULL ELSE substr(path, %s) END", []
    return "CASE WHEN path = %s THEN %s ELSE %s || substr(path, %s) END", [target, target]


def move_batch(job: Job, tenant: Tenant, *, after: str, size: int) -> Batch:
    """Move the next ``size`` files after ``after`` whose new path fits the limits."""
    source, target = job.params["from"], job.params["to"]
    expression, target_params = _moved_path_sql(target)
    # substr's start: the character after "source" (to keep "/rest"), or after "source/".
    start = len(source) + (2 if target is None else 1)
    new_path_params = [source, *target_params, start]
    after_sql, after_params = _after(after)
    change = ChangeSql(
        ctes=f"""batch AS (
            SELECT f.id, f.created_at, f.path AS previous_path, {expression} AS new_path
            FROM files_file AS f
            WHERE {_NOT_DELETED} {after_sql}
              AND coalesce(char_length({expression}), 0) <= %s
              AND coalesce(octet_length({expression}), 0) <= %s
            {_ORDER} LIMIT %s
            FOR UPDATE
        ), changed AS (
            UPDATE files_file AS f SET path = batch.new_path, updated_at = %s
            FROM batch WHERE f.id = batch.id
            RETURNING {_CHANGED}, batch.previous_path
        ), """,
        params=[
            *new_path_params,
            tenant.project_id,
            tenant.mode,
            source,
            like_below(source),
            *after_params,
            *new_path_params,
            settings.SERVICE_MAX_PATH_LENGTH,
            *new_path_params,
            MAX_PATH_BYTES,
            size,
            timezone.now(),
        ],
        returning=(_LAST,),
    )
    return _record(
        tenant,
        Event.Type.FILE_MOVED,
        change,
        extra="jsonb_build_object('previousPath', r.previous_path)",
        extra_params=[],
        job=job,
    )


def delete_batch(job: Job, tenant: Tenant, *, after: str, size: int) -> Batch:
    """Soft-delete the next ``size`` files after ``after``, as file_delete does: the status
    before is kept for restore, and a pending replacement is handed to the purge sweep."""
    path = job.params["path"]
    now = timezone.now()
    purge_after = now + timedelta(days=settings.SERVICE_DELETE_GRACE_DAYS)
    after_sql, after_params = _after(after)
    change = ChangeSql(
        ctes=f"""batch AS (
            SELECT f.id, f.created_at, f.status AS status_before, f.replacement_object_id
            FROM files_file AS f
            WHERE {_NOT_DELETED} {after_sql}
            {_ORDER} LIMIT %s
            FOR UPDATE
        ), discarded AS (
            UPDATE files_storedobject SET state = 'discarded'
            WHERE id IN (SELECT replacement_object_id FROM batch)
              AND state IN ('pending', 'live')
        ), changed AS (
            UPDATE files_file AS f SET status = 'deleted', status_before_delete =
                batch.status_before, deleted_at = %s, replacement_object_id = NULL,
                updated_at = %s
            FROM batch WHERE f.id = batch.id
            RETURNING {_CHANGED}
        ), """,
        params=[
            tenant.project_id,
            tenant.mode,
            path,
            like_below(path),
            *after_params,
            size,
            now,
            now,
        ],
        returning=(_LAST,),
    )
    return _record(
        tenant,
        Event.Type.FILE_DELETED,
        change,
        extra="jsonb_build_object('deletedAt', %s::text, 'purgeAfter', %s::text)",
        extra_params=[iso(now), iso(purge_after)],
        job=job,
    )


def restore_batch(job: Job, tenant: Tenant, *, after: str, size: int) -> Batch:
    """Restore the next ``size`` restorable files after ``after``, as file_restore does (the
    status before the delete comes back). The stored object's state is the database's: the
    purge sweep marks what it removes, so no store call is made per file."""
    path = job.params["path"]
    after_sql, after_params = _after(after)
    change = ChangeSql(
        ctes=f"""batch AS (
            SELECT f.id, f.created_at, f.status_before_delete FROM files_file AS f
            JOIN files_storedobject AS o ON o.id = f.current_object_id
            WHERE {_RESTORABLE} {after_sql}
            {_ORDER} LIMIT %s
            FOR UPDATE OF f
        ), changed AS (
            UPDATE files_file AS f
            SET status = coalesce(nullif(batch.status_before_delete, ''), 'uploaded'),
                deleted_at = NULL, status_before_delete = '', updated_at = %s
            FROM batch WHERE f.id = batch.id
            RETURNING {_CHANGED}
        ), """,
        params=[
            tenant.project_id,
            tenant.mode,
            path,
            like_below(path),
            *after_params,
            size,
            timezone.now(),
        ],
        returning=(_LAST,),
    )
    return _record(
        tenant,
        Event.Type.FILE_RESTORED,
        change,
        extra="'{}'::jsonb",
        extra_params=[],
        job=job,
    )


def _record(
    tenant: Tenant,
    type: Event.Type,
    change: ChangeSql,
    *,
    extra: str,
    extra_params: list[Any],
    job: Job,
) -> Batch:
    count, (last_id,) = events_record_rows(
        tenant=tenant,
        type=type,
        change=change,
        rows="changed",
        data=f"{_FILE_DATA} || {extra}",
        data_params=[job.id, *extra_params],
    )
    return Batch(count=count, last_id=last_id)


def left_in_folder(job: Job, tenant: Tenant) -> int:
    """How many files the operation would still change (0 when the folder is done): moves
    whose new path is too long included, so they fail the job rather than hide."""
    params = job.params
    if job.type == Job.Type.FOLDER_RESTORE:
        sql = (
            "SELECT count(*) FROM files_file AS f"
            f" JOIN files_storedobject AS o ON o.id = f.current_object_id WHERE {_RESTORABLE}"
        )
        path = params["path"]
    else:
        sql = f"SELECT count(*) FROM files_file AS f WHERE {_NOT_DELETED}"
        path = params["from"] if job.type == Job.Type.FOLDER_MOVE else params["path"]
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant.project_id, tenant.mode, path, like_below(path)])
        return int(cursor.fetchone()[0])


BATCHES = {
    Job.Type.FOLDER_MOVE: move_batch,
    Job.Type.FOLDER_DELETE: delete_batch,
    Job.Type.FOLDER_RESTORE: restore_batch,
}
FOLDER_EVENTS = {
    Job.Type.FOLDER_MOVE: Event.Type.FOLDER_MOVED,
    Job.Type.FOLDER_DELETE: Event.Type.FOLDER_DELETED,
    Job.Type.FOLDER_RESTORE: Event.Type.FOLDER_RESTORED,
}
