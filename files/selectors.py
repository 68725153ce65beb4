"""Read queries for files and folders, each served by one index (see File.Meta.indexes)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from accounts.models import Project
from files.filters import FileFilter
from files.models import File
from storage_service.errors import FileNotFound, ValidationError
from storage_service.fastfetch import columns, fetch_row, instance
from storage_service.ids import looks_like_id
from storage_service.pagination import Keyset, Page, decode_cursor, encode_cursor, keyset_page

SORT_FIELDS = {
    "createdAt": ("created_at", "created_at"),
    "updatedAt": ("updated_at", "updated_at"),
    "filename": ("filename", "filename"),
    "size": ("size", "size"),
}


@dataclass(frozen=True)
class FileListOptions:
    limit: int = 20
    cursor: str | None = None
    sort_by: str = "createdAt"
    order: str = "desc"


@cache
def _file_get_sql() -> str:
    _, cols = columns(File)
    return (
        f"SELECT {cols} FROM files_file"
        " WHERE files_file.id = %s AND files_file.project_id = %s"
        " AND files_file.status <> 'deleted'"
    )


def file_get(*, project: Project, file_id: str) -> File:
    """A visible file of the project; deleted, foreign and unknown files are all 404.

    The single-file read is the commonest request, so it is one hand-built query
    (storage_service/fastfetch.py), scoped to the project like every lookup.
    """
    if not looks_like_id(file_id, "file"):
        raise FileNotFound("No such file.")
    row = fetch_row(_file_get_sql(), [file_id, project.id])
    if row is None:
        raise FileNotFound("No such file.")
    file = instance(File, row)
    file.project = project
    return file


def file_list(*, project: Project, filters: dict[str, str], options: FileListOptions) -> Page[File]:
    """One page of the project's files.

    ``filters`` are the query's filter parameters (``search``, ``path``, ``status``,
    ``contentType``), validated and applied by ``FileFilter``. Deleted files are left out
    unless ``status=deleted`` is asked for (the trash). Every filter combined with every sort
    is a keyset page served by the index of that sort; ``search`` has its own plan
    (``_search_page``).
    """
    filterset = FileFilter(data=filters, queryset=File.objects.for_project(project))
    if not filterset.is_valid():
        raise ValidationError(
            "The query is invalid.",
            details={field: list(messages) for field, messages in filterset.errors.items()},
        )
    field, column = SORT_FIELDS[options.sort_by]
    keyset = Keyset(
        field=field,
        column=column,
        descending=options.order == "desc",
        scope=f"files:{options.sort_by}:{options.order}",
    )
    search = filterset.form.cleaned_data.get("search")
    if search:
        return _search_page(
            filterset.qs, search, keyset=keyset, limit=options.limit, cursor=options.cursor
        )
    return keyset_page(filterset.qs, keyset=keyset, limit=options.limit, cursor=options.cursor)


# A search whose matches number at most this many is answered by fetching them all through
# the trigram index and sorting them.
SEARCH_CANDIDATE_CAP = 5000
# With more matches, the sort's own index is walked for at most this many rows, looking for a
# page of matches, before falling back to fetching and sorting every match.
SEARCH_WINDOW_ROWS = 20000


def _search_page(
    base: QuerySet[File], term: str, *, keyset: Keyset, limit: int, cursor: str | None
) -> Page[File]:
    """A page of files whose filename contains ``term``, in keyset order.

    PostgreSQL has no statistics for a substring match, so left alone it guesses a few
    hundred matches for every term and picks one plan for all of them: fetching and sorting
    every match (slow for a common term: 97,000 matches took 290 ms), or walking the sort
    index until a page is found (slow for a rare term: 530 ms for none). Each step below is
    bounded, and each answers exactly what the plain query would:

    1. Fetch up to SEARCH_CANDIDATE_CAP + 1 matches, unordered, through the trigram index.
       If that is all of them, sort them and answer.
    2. Many matches: walk the sort index for at most SEARCH_WINDOW_ROWS rows; a page found
       there is the right page, since the window is a prefix of the ordered rows.
    3. Many matches, but too sparse in this order to fill a page in the window: the plain
       query (every match through the trigram index, sorted).
    """
    after = keyset.after(base, cursor)
    matches = after.filter(filename__icontains=term)
    order = keyset.sql_order
    column = keyset.column

    sql, params = matches.order_by().query.sql_with_params()
    rows = list(
        File.objects.raw(
            f"SELECT capped.*, count(*) OVER () AS candidates"
            f" FROM ({sql} LIMIT {SEARCH_CANDIDATE_CAP + 1}) AS capped"
            f" ORDER BY capped.{column} {order}, capped.id {order} LIMIT {limit + 1}",
            params,
        )
    )
    # raw() puts the extra column on each instance; every row carries the same count.
    if not rows or rows[0].__dict__["candidates"] <= SEARCH_CANDIDATE_CAP:
        return keyset.page(rows, limit)

    ordered_sql, ordered_params = after.order_by(*keyset.order_by()).query.sql_with_params()
    pattern = f"%{connection.ops.prep_for_like_query(term)}%"
    rows = list(
        File.objects.raw(
            f"SELECT window_rows.* FROM ({ordered_sql} LIMIT {SEARCH_WINDOW_ROWS}) AS window_rows"
            f" WHERE UPPER(window_rows.filename::text) LIKE UPPER(%s)"
            f" ORDER BY window_rows.{column} {order}, window_rows.id {order} LIMIT {limit + 1}",
            [*ordered_params, pattern],
        )
    )
    if len(rows) > limit:
        return keyset.page(rows, limit)

    return keyset_page(matches, keyset=keyset, limit=limit, cursor=None)


@dataclass(frozen=True)
class Folder:
    path: str
    name: str
    parent: str | None
    file_count: int

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "name": self.name,
            "parent": self.parent,
            "fileCount": self.file_count,
        }


@dataclass(frozen=True)
class FolderPage:
    items: list[Folder]
    has_more: bool
    next_cursor: str | None


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def folder_list(
    *, project: Project, parent: str | None, limit: int = 100, cursor: str | None = None
) -> FolderPage:
    """The direct child folders of ``parent`` (None: the root), by name.

    Folders are derived from the paths of visible files: a folder exists while a file is in
    it or below it, and ``fileCount`` counts those files. The prefix match is served by the
    ``(project, path)`` index.
    """
    scope = f"folders:{parent or ''}"
    after = decode_cursor(cursor, scope)[0] if cursor else None
    if parent is None:
        child = "split_part(path, '/', 1)"
        where = "path IS NOT NULL"
        params: list[Any] = []
    else:
        child = "split_part(substr(path, %s), '/', 1)"
        where = "path LIKE %s"
        params = [len(parent) + 2]
    sql_params: list[Any] = [*params, project.id]
    if parent is not None:
        sql_params.append(_like_escape(parent) + "/%")
    sql = f"""
        SELECT name, count(*) FROM (
            SELECT {child} AS name FROM files_file
            WHERE project_id = %s AND status <> 'deleted' AND {where}
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
    return FolderPage(items=items, has_more=has_more, next_cursor=next_cursor)
