"""The transitions of a file that more than one path makes, each written once.

- delete: ``DELETE``, the batch's ``delete``, a folder delete, and the expiry sweep;
- restore: ``…/restore``, the batch's ``restore``, a folder restore;
- move: ``PATCH`` of the path, the batch's ``update``, a folder move.

Each is one SQL statement over the files its caller selects (one file by id, a folder job's
next batch, the sweep's due files): it locks them, keeps only those in the state the
transition starts from (re-checked under the lock), changes them, and writes each one's event
through the events outbox (``events_record_rows``). So one file and a job's thousand are changed
by the same words, and the paths differ only where the guide says they do: a folder job adds
``jobId`` to each event, and the sweep's event is ``file.expired`` with ``expiresAt``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from accounts.tenancy import Tenant
from events.models import Event
from events.services import ChangeSql, events_record_rows
from jobs.models import Job
from storage_service.timefmt import iso

# Deleted files whose bytes are still there, over ``f`` (files_file) and ``o`` (its current
# stored object): what restore starts from, and what a folder restore looks for.
RESTORABLE = "f.status = 'deleted' AND f.purged_at IS NULL AND o.state <> 'purged'"
# What delete and move start from.
NOT_DELETED = "f.status <> 'deleted'"

# The columns every file event's data is built from (files/events.py's file_event_data).
_CHANGED = (
    "f.id, f.filename, f.path, f.content_type, f.size, f.version, f.status, f.upload_token_id"
)
_FILE_DATA = (
    "jsonb_build_object('fileId', r.id, 'filename', r.filename, 'path', r.path,"
    " 'contentType', r.content_type, 'size', r.size, 'version', r.version, 'status', r.status,"
    " 'uploadTokenId', r.upload_token_id)"
)
# The API's timestamp format (storage_service/timefmt.py's iso): milliseconds, truncated.
_ISO = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
# The last file changed in creation order: a folder job's next cursor.
_LAST = "(SELECT id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1)"


@dataclass(frozen=True)
class Selection:
    """The files a transition takes, within the tenant: ``where``, a condition over ``f``
    with positional ``params``; ``order`` and ``limit`` for a batch; ``skip_locked`` leaves
    a file another transaction holds to it (a sweep's)."""

    where: str
    params: list[Any]
    order: str = ""
    limit: int | None = None
    skip_locked: bool = False

    def sql(self, tenant: Tenant, state: str) -> tuple[str, list[Any]]:
        """The condition, order, limit and lock of the batch CTE, and their params."""
        sql = f"WHERE f.project_id = %s AND f.mode = %s AND {state} AND ({self.where}) {self.order}"
        params = [tenant.project_id, tenant.mode, *self.params]
        if self.limit is not None:
            sql += " LIMIT %s"
            params.append(self.limit)
        sql += " FOR UPDATE OF f" + (" SKIP LOCKED" if self.skip_locked else "")
        return sql, params


@dataclass(frozen=True)
class Changed:
    count: int  # files changed
    last_id: str | None  # the last of them in creation order, (created_at, id)


def delete_files(
    *, tenant: Tenant, rows: Selection, job: Job | None = None, expired: bool = False
) -> Changed:
    """Soft-delete the selected files that are not deleted: the status before is kept for
    restore, and a pending replacement is handed to the purge sweep. Each gets
    ``file.deleted`` (``deletedAt``, ``purgeAfter``), or ``file.expired`` with its
    ``expiresAt`` too when the expiry sweep deletes it."""
    now = timezone.now()
    purge_after = now + timedelta(days=settings.SERVICE_DELETE_GRACE_DAYS)
    selected, params = rows.sql(tenant, NOT_DELETED)
    change = ChangeSql(
        ctes=f"""batch AS (
            SELECT f.id, f.created_at, f.status AS status_before, f.replacement_object_id,
                f.expires_at
            FROM files_file AS f {selected}
        ), discarded AS (
            UPDATE files_storedobject SET state = 'discarded'
            WHERE id IN (SELECT replacement_object_id FROM batch)
              AND state IN ('pending', 'live')
        ), changed AS (
            UPDATE files_file AS f SET status = 'deleted', status_before_delete =
                batch.status_before, deleted_at = %s, replacement_object_id = NULL,
                updated_at = %s
            FROM batch WHERE f.id = batch.id
            RETURNING {_CHANGED}, batch.expires_at
        ), """,
        params=[*params, now, now],
        returning=(_LAST,),
    )
    extra = "jsonb_build_object('deletedAt', %s::text, 'purgeAfter', %s::text)"
    if expired:
        extra += " || jsonb_build_object('expiresAt', " + _ISO.format("r.expires_at") + ")"
    return _record(
        tenant,
        Event.Type.FILE_EXPIRED if expired else Event.Type.FILE_DELETED,
        change,
        extra=extra,
        extra_params=[iso(now), iso(purge_after)],
        job=job,
    )


def restore_files(*, tenant: Tenant, rows: Selection, job: Job | None = None) -> Changed:
    """Restore the selected files that are deleted and whose bytes are still there, each
    with ``file.restored``: the status before the delete comes back, and the expiry goes (an
    expired file kept its ``expiresAt``, and the sweep would delete it again)."""
    selected, params = rows.sql(tenant, RESTORABLE)
    change = ChangeSql(
        ctes=f"""batch AS (
            SELECT f.id, f.created_at, f.status_before_delete FROM files_file AS f
            JOIN files_storedobject AS o ON o.id = f.current_object_id
            {selected}
        ), changed AS (
            UPDATE files_file AS f
            SET status = coalesce(nullif(batch.status_before_delete, ''), 'uploaded'),
                deleted_at = NULL, status_before_delete = '', expires_at = NULL,
                updated_at = %s
            FROM batch WHERE f.id = batch.id
            RETURNING {_CHANGED}
        ), """,
        params=[*params, timezone.now()],
        returning=(_LAST,),
    )
    return _record(tenant, Event.Type.FILE_RESTORED, change, job=job)


def move_files(
    *, tenant: Tenant, rows: Selection, new_path: tuple[str, list[Any]], job: Job | None = None
) -> Changed:
    """Give the selected files that are not deleted the path ``new_path`` (SQL over ``f``'s
    columns, and its params), each with ``file.moved`` (``previousPath``)."""
    expression, expression_params = new_path
    selected, params = rows.sql(tenant, NOT_DELETED)
    change = ChangeSql(
        ctes=f"""batch AS (
            SELECT f.id, f.created_at, f.path AS previous_path, {expression} AS new_path
            FROM files_file AS f {selected}
        ), changed AS (
            UPDATE files_file AS f SET path = batch.new_path, updated_at = %s
            FROM batch WHERE f.id = batch.id
            RETURNING {_CHANGED}, batch.previous_path
        ), """,
        params=[*expression_params, *params, timezone.now()],
        returning=(_LAST,),
    )
    return _record(
        tenant,
        Event.Type.FILE_MOVED,
        change,
        extra="jsonb_build_object('previousPath', r.previous_path)",
        job=job,
    )


def _record(
    tenant: Tenant,
    type: Event.Type,
    change: ChangeSql,
    *,
    extra: str = "",
    extra_params: tuple[Any, ...] | list[Any] = (),
    job: Job | None,
) -> Changed:
    data, data_params = _FILE_DATA, []
    if job is not None:
        data += " || jsonb_build_object('jobId', %s::text)"
        data_params.append(job.id)
    if extra:
        data += f" || {extra}"
        data_params.extend(extra_params)
    count, (last_id,) = events_record_rows(
        tenant=tenant, type=type, change=change, rows="changed", data=data, data_params=data_params
    )
    return Changed(count=count, last_id=last_id)
