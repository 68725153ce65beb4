"""Bulk seeding of the bench database: files by the million in SQL, a shared stored object,
and projects made and removed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from bench._database import connect
from bench._env import log

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_ALPHABET_ARRAY = "'{" + ",".join(_ALPHABET) + "}'::text[]"


def crockford(expr: str, chars: int) -> str:
    """SQL: the low ``5 * chars`` bits of bigint ``expr`` in lowercase Crockford base32."""
    return " || ".join(
        f"({_ALPHABET_ARRAY})[((({expr}) >> {5 * (chars - 1 - k)}) & 31) + 1]" for k in range(chars)
    )


def file_id_sql(millis: str, random_hi: str, serial: str) -> str:
    """SQL for an id shaped as storage_service.ids.new_id makes them.

    ``file_`` + 26 chars encoding ``millis << 80 | random80``: 10 chars of time (48 bits, two
    zero bits on top), then 80 "random" bits, here 50 random bits (``random_hi``) and 30 bits
    of ``serial``, which makes every id unique without a uniqueness retry.
    """
    return f"'file_' || {crockford(millis, 10)} || {crockford(random_hi, 10)} || " + crockford(
        serial, 6
    )


# Filename pattern, content type and log-uniform size range (bytes) by n % 10.
_KINDS: Sequence[tuple[str, str, int, int]] = (
    ("'IMG_' || n || '.jpg'", "image/jpeg", 200_000, 8_000_000),
    ("'IMG_' || n || '.jpg'", "image/jpeg", 200_000, 8_000_000),
    ("'IMG_' || n || '.jpg'", "image/jpeg", 200_000, 8_000_000),
    ("'Screenshot_' || n || '.png'", "image/png", 50_000, 3_000_000),
    ("'report-' || n || '.pdf'", "application/pdf", 20_000, 20_000_000),
    ("'invoice_' || n || '.pdf'", "application/pdf", 20_000, 2_000_000),
    ("'notes-' || n || '.txt'", "text/plain", 100, 50_000),
    ("'data-export-' || n || '.csv'", "text/csv", 1_000, 100_000_000),
    ("'video_' || n || '.mp4'", "video/mp4", 5_000_000, 2_000_000_000),
    ("'archive-' || n || '.zip'", "application/zip", 1_000_000, 1_000_000_000),
)
TEAMS = 60
YEARS = (2021, 2022, 2023, 2024, 2025)


def _case(values: Sequence[str]) -> str:
    whens = " ".join(f"WHEN {k} THEN {value}" for k, value in enumerate(values))
    return f"CASE n %% {len(values)} {whens} END"


def seed_files_sql() -> str:
    """INSERT ... SELECT generate_series: ``%(rows)s`` files of ``%(project)s``.

    Created over the last year in n order (so ids, which start with the creation time, grow
    with n); ~3% deleted, ~2% pending, the rest uploaded; ~10% at the root, the others in one
    of TEAMS x YEARS folders ``team-<k>/year-<y>``. Every file points at ``%(object)s``.
    """
    filename = _case([kind[0] for kind in _KINDS])
    content_type = _case([f"'{kind[1]}'" for kind in _KINDS])
    size = _case(
        [
            f"round(exp(ln({lo}) + s.u_size * (ln({hi}) - ln({lo}))))::bigint"
            for _, _, lo, hi in _KINDS
        ]
    )
    years = ",".join(str(y) for y in YEARS)
    file_id = file_id_sql("s.millis", "s.random_hi", "s.n")
    return f"""
        INSERT INTO files_file (
            id, project_id, mode, filename, path, content_type, size, status, version, metadata,
            checksum, sniffed_type, current_object_id, replacement_object_id, created_at,
            updated_at, uploaded_at, deleted_at, status_before_delete, purged_at
        )
        SELECT
            {file_id},
            %(project)s,
            'test',  -- the benches' keys are test keys, which see only test-mode files
            s.filename,
            CASE WHEN s.u_path < 0.1 THEN NULL
                 ELSE 'team-' || floor(s.u_path * 10 * {TEAMS})::int %% {TEAMS} || '/year-'
                      || (ARRAY[{years}])[floor(random() * {len(YEARS)})::int + 1]
            END,
            s.content_type,
            {size},
            s.status,
            CASE WHEN s.u_meta < 0.05 THEN 2 ELSE 1 END,
            CASE WHEN s.u_meta < 0.2
                 THEN jsonb_build_object('source', 'bench', 'batch', s.n %% 97) END,
            CASE WHEN s.status <> 'pending'
                 THEN 'sha256:' || md5(s.n::text) || md5((s.n + 1)::text) END,
            CASE WHEN s.status <> 'pending' THEN s.content_type END,
            %(object)s,
            NULL,
            s.created_at,
            CASE WHEN s.status = 'deleted' THEN s.changed_at
                 WHEN s.u_meta < 0.3 THEN s.changed_at
                 ELSE s.created_at + interval '2 seconds' END,
            CASE WHEN s.status <> 'pending' THEN s.created_at + interval '2 seconds' END,
            CASE WHEN s.status = 'deleted' THEN s.changed_at END,
            CASE WHEN s.status = 'deleted' THEN 'uploaded' ELSE '' END,
            NULL
        FROM (
            SELECT
                g.n,
                g.created_at,
                g.created_at + (%(now)s - g.created_at) * random() AS changed_at,
                floor(extract(epoch FROM g.created_at) * 1000)::bigint AS millis,
                floor(random() * 1125899906842624)::bigint AS random_hi,
                {filename} AS filename,
                {content_type} AS content_type,
                CASE WHEN g.u_status < 0.03 THEN 'deleted'
                     WHEN g.u_status < 0.05 THEN 'pending'
                     ELSE 'uploaded' END AS status,
                random() AS u_size,
                random() AS u_path,
                random() AS u_meta
            FROM (
                SELECT
                    n,
                    %(start)s + %(step)s * (n + 0.9 * random()) AS created_at,
                    random() AS u_status
                FROM generate_series(1::bigint, %(rows)s::bigint) AS n
            ) AS g
        ) AS s
    """


def _droppable_indexes(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """files_file's indexes that back no constraint (all but the primary key), with DDL."""
    rows = conn.execute(
        """
        SELECT c.relname, pg_get_indexdef(i.indexrelid)
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'files_file'::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
        ORDER BY c.relname
        """
    ).fetchall()
    return [(name, ddl) for name, ddl in rows]


def seed_files(
    url: str, *, project_id: str, object_id: int, rows: int, rebuild_indexes: bool
) -> None:
    """Insert ``rows`` files in one transaction, then VACUUM ANALYZE.

    With ``rebuild_indexes`` the secondary indexes are dropped before the insert and rebuilt
    after it (from their own definitions, so any index a migration adds is rebuilt too):
    building an index once is several times faster than inserting a million rows into ten.
    Foreign-key triggers are skipped for the insert (session_replication_role) where we may:
    every row references the same project and stored object, both created just before.
    """
    started = time.monotonic()
    with connect(url) as conn:
        conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
        conn.execute("SET LOCAL synchronous_commit = off")
        try:
            with conn.transaction():
                conn.execute("SET LOCAL session_replication_role = replica")
        except psycopg.errors.InsufficientPrivilege:
            log("not a superuser: foreign keys are checked during the insert (slower)")
        indexes = _droppable_indexes(conn) if rebuild_indexes else []
        for name, _ in indexes:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        year_us = 365 * 24 * 3600 * 1_000_000
        params = {
            "project": project_id,
            "object": object_id,
            "rows": rows,
            "now": _db_now(conn),
            "start": _db_now(conn) - _micros(year_us),
            "step": _micros(year_us // (rows + 1)),
        }
        conn.execute(seed_files_sql(), params)
        inserted = time.monotonic()
        log(f"inserted {rows:,} files in {inserted - started:.1f} s")
        for _, ddl in indexes:
            conn.execute(ddl)
        if indexes:
            log(f"rebuilt {len(indexes)} indexes in {time.monotonic() - inserted:.1f} s")
        conn.execute("SET LOCAL session_replication_role = DEFAULT")
        conn.commit()
    vacuumed = time.monotonic()
    with connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) files_file")
    log(f"VACUUM ANALYZE in {time.monotonic() - vacuumed:.1f} s")


def _db_now(conn: psycopg.Connection) -> datetime:
    row = conn.execute("SELECT date_trunc('second', now())").fetchone()
    assert row is not None
    now: datetime = row[0]
    return now


def _micros(value: int) -> timedelta:
    return timedelta(microseconds=value)


def shared_object(project_id: str) -> int:
    """One live stored object that every seeded file points at (needs Django set up)."""
    from files.models import StoredObject

    stored, _ = StoredObject.objects.get_or_create(
        storage_key=f"{project_id}/bench-shared-object",
        defaults={
            "project_id": project_id,
            "mode": "test",  # the benches' keys are test keys
            "state": StoredObject.State.LIVE,
            "declared_type": "application/octet-stream",
            "declared_size": 1024,
            "size": 1024,
        },
    )
    return stored.pk


def delete_project(url: str, project_id: str) -> None:
    """Remove a bench project and every row that belongs to it, in one transaction.

    Tables are found from the catalog (every table with a ``project_id``, and those that
    reference files_file by ``file_id``), so tables added later are covered; the foreign keys
    are deferred, so the order does not matter within the transaction.
    """
    with connect(url) as conn:
        by_file = conn.execute(
            """
            SELECT DISTINCT c.conrelid::regclass::text, a.attname
            FROM pg_constraint c
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
            WHERE c.contype = 'f' AND c.confrelid = 'files_file'::regclass
            """
        ).fetchall()
        for table, column in by_file:
            conn.execute(
                sql.SQL(
                    "DELETE FROM {} WHERE {} IN (SELECT id FROM files_file WHERE project_id = %s)"
                ).format(sql.Identifier(table), sql.Identifier(column)),
                (project_id,),
            )
        by_project = conn.execute(
            """
            SELECT c.conrelid::regclass::text
            FROM pg_constraint c
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
            WHERE c.contype = 'f' AND c.confrelid = 'accounts_project'::regclass
              AND a.attname = 'project_id'
            """
        ).fetchall()
        # Files before stored objects only for readability: the constraints are deferred.
        tables = sorted({row[0] for row in by_project}, key=lambda t: t != "files_file")
        for table in tables:
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE project_id = %s").format(sql.Identifier(table)),
                (project_id,),
            )
        # Usage delta rows name the project without a foreign key.
        if conn.execute("SELECT to_regclass('files_usagedelta')").fetchone() != (None,):
            conn.execute("DELETE FROM files_usagedelta WHERE project_id = %s", (project_id,))
        org = conn.execute(
            "DELETE FROM accounts_project WHERE id = %s RETURNING organization_id", (project_id,)
        ).fetchone()
        if org is not None:
            conn.execute(
                "DELETE FROM accounts_organization o WHERE id = %s AND NOT EXISTS "
                "(SELECT 1 FROM accounts_project p WHERE p.organization_id = o.id)",
                (org[0],),
            )
        conn.commit()


def fresh_project(url: str, *, prefix: str, rows: int) -> Any:
    """A new project named ``prefix<time>`` with ``rows`` seeded files, after removing the
    projects of earlier (crashed) runs with that prefix."""
    from accounts.models import Project
    from accounts.services import project_create

    for old in Project.objects.filter(name__startswith=prefix).values_list("id", flat=True):
        log(f"removing the leftover project {old}")
        delete_project(url, old)
    project = project_create(name=f"{prefix}{int(time.time())}")
    seed_files(
        url,
        project_id=project.id,
        object_id=shared_object(project.id),
        rows=rows,
        rebuild_indexes=False,
    )
    return project
