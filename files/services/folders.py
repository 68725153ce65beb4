"""Folder operations: move (rename), delete and restore every file at or below a path.

Paths are logical and storage keys never change, so no byte moves: each operation is a job
(jobs/services.py runs it; the kinds below are registered with it) that changes file rows in
batches. Starting one checks what can be
checked at once (the folder exists, the resulting paths fit, the tenant's running-jobs cap),
then records the job and hands it to the workers.

Each batch of an operation takes the next files in creation order (``created_at``, then id)
after the job's cursor, and changes them with the very transition the single-file endpoint
makes (files/services/transitions.py: ``PATCH`` of the path, ``DELETE``, ``…/restore``), in
one SQL statement with each one's event, which carries the job's id.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection

from accounts.tenancy import Tenant
from events.models import Event
from files.services.transitions import (
    NOT_DELETED,
    RESTORABLE,
    Changed,
    Selection,
    delete_files,
    move_files,
    restore_files,
)
from files.validation import MAX_PATH_BYTES
from jobs.kinds import Kind
from jobs.models import Job
from jobs.services import job_create
from storage_service.errors import FolderNotFound, ValidationError


def like_below(path: str) -> str:
    """The LIKE pattern of every path strictly below ``path`` (``path/…``)."""
    escaped = path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "/%"


_IN_FOLDER = "(f.path = %s OR f.path LIKE %s)"
# A folder's files that a move or delete takes, and those a restore takes (params: the
# tenant's project and mode, the path and like_below(path)).
_NOT_DELETED = f"f.project_id = %s AND f.mode = %s AND {NOT_DELETED} AND {_IN_FOLDER}"
_RESTORABLE = f"f.project_id = %s AND f.mode = %s AND {RESTORABLE} AND {_IN_FOLDER}"


# --- Starting an operation -----------------------------------------------------------------


def folder_move(*, tenant: Tenant, source: str, target: str | None) -> Job:
    """Start moving every file that is not deleted at or below ``source`` to the same place
    under ``target`` (None: the root). 202 with the job; the request's own checks (a root
    ``from``, ``to`` at or below ``from``) are the serializer's.

    1. The longest path under ``source`` decides whether every resulting path fits the
       limits: 400 if not, 404 FOLDER_NOT_FOUND if there is no file at all.
    2. The job, within the tenant's cap (``job_create``, jobs/services.py).
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
    return job_create(tenant, Job.Type.FOLDER_MOVE, {"from": source, "to": target})


def folder_delete(*, tenant: Tenant, path: str) -> Job:
    """Start soft-deleting every file at or below ``path``, as ``DELETE`` would."""
    if _longest_path(tenant, path) is None:
        raise FolderNotFound(f"No file is in folder {path!r} or below it.")
    return job_create(tenant, Job.Type.FOLDER_DELETE, {"path": path})


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
    return job_create(tenant, Job.Type.FOLDER_RESTORE, {"path": path})


def _octets(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _longest_path(tenant: Tenant, path: str) -> tuple[int, int] | None:
    """The longest path (characters, bytes) of the files not deleted at or below ``path``;
    None when there are none. Served by file_path_prefix."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT max(char_length(f.path)), max(octet_length(f.path)) FROM files_file AS f"
            f" WHERE {_NOT_DELETED}",
            [tenant.project_id, tenant.mode, path, like_below(path)],
        )
        chars, octets = cursor.fetchone()
    return None if chars is None else (int(chars), int(octets))


# --- One batch of an operation -------------------------------------------------------------

# A batch walks the tenant's files in creation order, (created_at, id), after the file the job's
# cursor names: the tenant's own list index (file_list_created, or file_list_status for the
# trash) serves that order backwards, so a job reads its tenant's rows only, never the rows
# of every tenant that an order by id alone would walk through.
_ORDER = "ORDER BY f.created_at, f.id"


def _next_in_folder(
    path: str, after: str, size: int, *, where: str = "", params: Any = ()
) -> Selection:
    """The next ``size`` files at or below ``path`` after the cursor's file (none: from the
    start), with the extra condition ``where``."""
    condition, condition_params = _IN_FOLDER, [path, like_below(path)]
    if after:
        condition += (
            " AND (f.created_at, f.id) > (SELECT created_at, id FROM files_file WHERE id = %s)"
        )
        condition_params.append(after)
    if where:
        condition += f" AND {where}"
        condition_params.extend(params)
    return Selection(condition, condition_params, order=_ORDER, limit=size)


def _moved_path_sql(target: str | None) -> tuple[str, list[Any]]:
    """SQL (over ``files_file``'s ``path``) of a file's path after the move, and its params:
    ``source`` itself becomes ``target``; ``source/rest`` becomes ``target/rest``."""
    if target is None:
        return "CASE WHEN path = %s THEN NULL ELSE substr(path, %s) END", []
    return "CASE WHEN path = %s THEN %s ELSE %s || substr(path, %s) END", [target, target]


def move_batch(job: Job, tenant: Tenant, *, after: str, size: int) -> Changed:
    """Move the next ``size`` files after ``after`` whose new path fits the limits."""
    source, target = job.params["from"], job.params["to"]
    expression, target_params = _moved_path_sql(target)
    # substr's start: the character after "source" (to keep "/rest"), or after "source/".
    start = len(source) + (2 if target is None else 1)
    new_path_params = [source, *target_params, start]
    fits = (
        f"coalesce(char_length({expression}), 0) <= %s"
        f" AND coalesce(octet_length({expression}), 0) <= %s"
    )
    fits_params = [
        *new_path_params,
        settings.SERVICE_MAX_PATH_LENGTH,
        *new_path_params,
        MAX_PATH_BYTES,
    ]
    return move_files(
        tenant=tenant,
        rows=_next_in_folder(source, after, size, where=fits, params=fits_params),
        new_path=(expression, new_path_params),
        job=job,
    )


def delete_batch(job: Job, tenant: Tenant, *, after: str, size: int) -> Changed:
    """Soft-delete the next ``size`` files after ``after``, as ``DELETE`` does."""
    return delete_files(
        tenant=tenant, rows=_next_in_folder(job.params["path"], after, size), job=job
    )


def restore_batch(job: Job, tenant: Tenant, *, after: str, size: int) -> Changed:
    """Restore the next ``size`` restorable files after ``after``, as ``…/restore`` does. The
    stored object's state is the database's: the purge sweep marks what it removes, so no store
    call is made per file."""
    return restore_files(
        tenant=tenant, rows=_next_in_folder(job.params["path"], after, size), job=job
    )


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


# Registered with the jobs app by files/apps.py: what each folder operation's job does.
KINDS = {
    Job.Type.FOLDER_MOVE: Kind(move_batch, left_in_folder, Event.Type.FOLDER_MOVED),
    Job.Type.FOLDER_DELETE: Kind(delete_batch, left_in_folder, Event.Type.FOLDER_DELETED),
    Job.Type.FOLDER_RESTORE: Kind(restore_batch, left_in_folder, Event.Type.FOLDER_RESTORED),
}
