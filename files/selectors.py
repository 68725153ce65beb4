"""Read queries for files and folders, each served by one index (see File.Meta.indexes)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from accounts.models import ApiKey
from accounts.selectors import api_key_from_row, key_hash_of, key_query
from accounts.tenancy import Tenant
from files.models import File
from storage_service.errors import FileNotFound
from storage_service.fastfetch import columns, fetch_row, instance
from storage_service.ids import looks_like_id
from storage_service.pagination import Page, decode_cursor, encode_cursor

# The visible files of a tenant (project and mode): the scope of every single-file read
# (file_get and the key-joined read below); %s is the file id, then the project id and mode.
_VISIBLE_FILE = (
    "files_file.id = %s AND files_file.project_id = {project} AND files_file.mode = {mode}"
    " AND files_file.status <> 'deleted'"
)


@cache
def _file_get_sql() -> str:
    _, cols = columns(File)
    return f"SELECT {cols} FROM files_file WHERE {_VISIBLE_FILE.format(project='%s', mode='%s')}"


@cache
def _file_with_key_sql() -> str:
    key = key_query()
    _, cols = columns(File)
    # A key's tenant is its project and its environment (the mode of what it makes and sees).
    visible = _VISIBLE_FILE.format(
        project="accounts_apikey.project_id", mode="accounts_apikey.environment"
    )
    # LEFT JOIN: a valid key with no such file is still the key (the 404 comes after the
    # rate limit, as on every path).
    return (
        f"SELECT {key.select}, {cols} FROM {key.joins}"
        f" LEFT JOIN files_file ON {visible} WHERE {key.where}"
    )


def file_get(*, tenant: Tenant, file_id: str) -> File:
    """A visible file of the tenant; deleted, foreign (another project or mode) and unknown
    files are all 404.

    The single-file read is the commonest request, so it is one hand-built query
    (storage_service/fastfetch.py), scoped to the tenant (project and mode) like every lookup.
    """
    if not looks_like_id(file_id, "file"):
        raise FileNotFound("No such file.")
    row = fetch_row(_file_get_sql(), [file_id, tenant.project_id, tenant.mode])
    if row is None:
        raise FileNotFound("No such file.")
    file = instance(File, row)
    file.project = tenant.project
    return file


@dataclass(frozen=True)
class KeyAndFile:
    api_key: ApiKey | None  # None: unknown, revoked or malformed key
    file: File | None  # None: no visible file of the key's project with that id


def file_get_with_key(*, raw_key: str, file_id: str) -> KeyAndFile | None:
    """The key (as accounts' api_key_resolve finds it) and the visible file (as file_get
    finds it, in the key's project), in ONE round trip: GET /v1/files/<id>'s two lookups.

    None when the id is not a file id (the caller resolves the key alone and answers 404).
    """
    if not looks_like_id(file_id, "file"):
        return None
    digest = key_hash_of(raw_key)
    if digest is None:
        return KeyAndFile(None, None)
    row = fetch_row(_file_with_key_sql(), [file_id, digest])
    if row is None:
        return KeyAndFile(None, None)
    api_key = api_key_from_row(row)
    file_row = row[key_query().width :]
    if file_row[0] is None:  # the LEFT JOIN found no file
        return KeyAndFile(api_key, None)
    file = instance(File, file_row)
    file.project = api_key.project
    return KeyAndFile(api_key, file)


# A search first walks the sort's own index for at most this many rows, looking for a page of
# matches: cheap (3 ms at most over 1M files here) and enough whenever 2% or more match.
SEARCH_WINDOW_ROWS = 5000


def search_page_rows(queryset: QuerySet[File], term: str, count: int) -> list[File]:
    """The first ``count`` files of ``queryset`` (filtered, in keyset order, after the
    cursor) whose filename contains ``term``, case-insensitively.

    PostgreSQL has no statistics for a substring match: it guesses a few hundred matches for
    every term and then picks a plan that is slow for some terms. Fetching and sorting every
    match is slow for a common term (97,000 matches of 1M); walking the sort index until a
    page is found is slow for a term with no match. So the search takes two steps, each
    answering exactly what the plain query would:

    1. Walk the sort index for at most SEARCH_WINDOW_ROWS rows. A page found there is the
       right page, since the window is a prefix of the ordered rows. Common terms end here.
    2. Otherwise matches are rare in this order: fetch every match (through the trigram index
       where pg_trgm exists) and sort them. ``OFFSET 0`` keeps the planner from turning this
       back into a walk of the sort index, the plan that is slow for rare terms.
    """
    order = ", ".join(_order_sql(str(key)) for key in queryset.query.order_by)
    ordered_sql, ordered_params = queryset.query.sql_with_params()
    pattern = f"%{connection.ops.prep_for_like_query(term)}%"
    rows = list(
        File.objects.raw(
            f"SELECT window_rows.* FROM ({ordered_sql} LIMIT {SEARCH_WINDOW_ROWS}) AS window_rows"
            f" WHERE UPPER(window_rows.filename::text) LIKE UPPER(%s)"
            f" ORDER BY {order.format(table='window_rows')} LIMIT {count}",
            [*ordered_params, pattern],
        )
    )
    if len(rows) >= count:
        return rows
    matches = queryset.filter(filename__icontains=term).order_by()
    matches_sql, params = matches.query.sql_with_params()
    return list(
        File.objects.raw(
            f"SELECT matches.* FROM ({matches_sql} OFFSET 0) AS matches"
            f" ORDER BY {order.format(table='matches')} LIMIT {count}",
            params,
        )
    )


def _order_sql(key: str) -> str:
    """An ``order_by`` key as SQL on a subquery's columns (``{table}`` names the subquery)."""
    column = File._meta.get_field(key.lstrip("-")).column  # type: ignore[union-attr]
    return f'{{table}}."{column}" {"DESC" if key.startswith("-") else "ASC"}'


@dataclass(frozen=True)
class Folder:
    path: str
    name: str
    parent: str | None
    file_count: int


def folder_list(
    *, tenant: Tenant, parent: str | None, limit: int = 100, cursor: str | None = None
) -> Page[Folder]:
    """The direct child folders of ``parent`` (None: the root), by name.

    Folders are derived from the paths of visible files: a folder exists while a file is in
    it or below it, and ``fileCount`` counts those files. The prefix match is served by the
    ``(project, mode, path)`` index.
    """
    scope = f"folders:{parent or ''}"
    after = decode_cursor(cursor, scope)[0] if cursor else None
    if parent is None:
        child = "split_part(path, '/', 1)"
        where = "path IS NOT NULL"
        sql_params: list[Any] = [tenant.project_id, tenant.mode]
    else:
        child = "split_part(substr(path, %s), '/', 1)"
        where = "path LIKE %s"
        prefix = connection.ops.prep_for_like_query(parent) + "/%"
        sql_params = [len(parent) + 2, tenant.project_id, tenant.mode, prefix]
    sql = f"""
        SELECT name, count(*) FROM (
            SELECT {child} AS name FROM files_file
            WHERE project_id = %s AND mode = %s AND status <> 'deleted' AND {where}
        ) AS children
        WHERE name <> '' {"AND name > %s" if after is not None else ""}
        GROUP BY name ORDER BY name LIMIT %s
    """
    if after is not None:
        sql_params.append(after)
    sql_params.append(limit + 1)
    with connection.cursor() as db:
        db.execute(sql, sql_params)
        rows = db.fetchall()
    has_more = len(rows) > limit
    rows = rows[:limit]
    items = [
        Folder(
            path=name if parent is None else f"{parent}/{name}",
            name=name,
            parent=parent,
            file_count=count,
        )
        for name, count in rows
    ]
    next_cursor = (
        encode_cursor(scope, items[-1].name, items[-1].name) if has_more and items else None
    )
    return Page(items=items, has_more=has_more, next_cursor=next_cursor)
