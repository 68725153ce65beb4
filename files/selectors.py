"""Read queries for files and folders, each served by one index (see File.Meta.indexes)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from accounts.models import ApiKey
from accounts.selectors import api_key_from_row, key_hash_of, key_query
from accounts.tenancy import Tenant
from files.models import File, FileQuerySet
from files.rendering import file_json_sql, metadata_text
from files.validation import clean_path
from storage_service.errors import FileNotFound, ValidationError
from storage_service.fastfetch import columns, fetch_all, fetch_row, instance
from storage_service.ids import looks_like_id
from storage_service.pagination import Keyset, Page, decode_cursor, encode_cursor

# The query parameters that filter the list (ListFilters).
FILTERS = ("search", "path", "status", "contentType")
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

    @classmethod
    def of(cls, query: Mapping[str, Any]) -> FileListOptions:
        """The options of a list query validated by files.serializers.FileListQuery."""
        return cls(
            limit=query["limit"],
            cursor=query.get("cursor"),
            sort_by=query["sortBy"],
            order=query["order"],
        )


def filters_of(params: Mapping[str, str]) -> dict[str, str]:
    """The filter parameters (FILTERS) a list's query string gives, for ListFilters."""
    return {name: params[name] for name in FILTERS if name in params}


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


@dataclass(frozen=True)
class ListFilters:
    """The filters of one list request, as django-filter applied them before (issue 14 made
    them plain SQL): an empty parameter is no filter; ``path`` ``/`` means root-level files
    (a null path); without ``status`` deleted files are left out (the trash is asked for
    with ``status=deleted``); ``search`` has its own plan (``_search_page``)."""

    status: str | None = None
    path: str | None = None
    root_only: bool = False  # path=/ (or a path that cleans to the root)
    content_type: str | None = None
    search: str | None = None

    @classmethod
    def of(cls, filters: dict[str, str]) -> ListFilters:
        status = filters.get("status") or None
        if status is not None and status not in File.Status.values:
            raise ValidationError(
                "The query is invalid.",
                details={"status": [f"Must be one of: {', '.join(File.Status.values)}."]},
            )
        # Stripped as a form's CharField strips (the path and contentType rules already
        # refuse surrounding spaces; search keeps them: they are part of the term).
        raw_path = (filters.get("path") or "").strip()
        path = clean_path(raw_path) if raw_path else None
        return cls(
            status=status,
            path=path,
            root_only=bool(raw_path) and path is None,
            content_type=(filters.get("contentType") or "").strip() or None,
            search=filters.get("search") or None,
        )


def file_list(*, tenant: Tenant, filters: dict[str, str], options: FileListOptions) -> Page[File]:
    """One page of the tenant's files.

    ``filters`` are the query's filter parameters (``search``, ``path``, ``status``,
    ``contentType``), as ``ListFilters`` reads them. Deleted files are left out unless
    ``status=deleted`` is asked for (the trash). Every filter combined with every sort is a
    keyset page served by the index of that sort; ``search`` has its own plan
    (``_search_page``).
    """
    wanted = ListFilters.of(filters)
    keyset = _keyset(options)
    if wanted.search:
        base = _filtered(File.objects.for_tenant(tenant), wanted)
        return _search_page(
            base, wanted.search, keyset=keyset, limit=options.limit, cursor=options.cursor
        )
    rows = _page_rows(wanted, options, {"project": tenant.project_id, "mode": tenant.mode})
    files = [instance(File, row) for row in rows]
    for file in files:
        file.project = tenant.project
    return keyset.page(files, options.limit)


class RenderedFile:
    """A file of a page as PostgreSQL wrote it (files/rendering.py): its JSON text, and its
    id and sort value (under the File attribute's name) for the page's cursor."""

    __slots__ = ("created_at", "filename", "json", "pk", "size", "updated_at")

    def __init__(self, pk: str, field: str, value: Any, json: str) -> None:
        self.pk = pk
        self.json = json
        setattr(self, field, value)


@dataclass(frozen=True)
class KeyAndRenderedPage:
    api_key: ApiKey | None  # None: unknown, revoked or malformed key
    page: Page[RenderedFile] | None  # None with no key


def file_list_rendered_with_key(
    *, raw_key: str, filters: dict[str, str], options: FileListOptions
) -> KeyAndRenderedPage | None:
    """The key (as api_key_resolve finds it) and a page of its tenant's files (as file_list
    finds it), in ONE round trip, each file as the JSON text ``file_json`` renders to,
    written by the query (files/rendering.py): the list's fast lane (issue 14).

    None for what this one statement does not serve (a search, which takes two steps): the
    caller lists as usual. A refusal of the query (a bad filter or cursor) is raised before
    anything is read; file_list raises the same ones, but after the key is checked and the
    request counted, so a caller that gets one lets the usual path answer (401, 429 or the
    400, in that order)."""
    wanted = ListFilters.of(filters)
    if wanted.search:
        return None
    digest = key_hash_of(raw_key)
    if digest is None:
        return KeyAndRenderedPage(None, None)
    rows = _page_rows(wanted, options, {"key_hash": digest})
    if not rows:
        return KeyAndRenderedPage(None, None)
    api_key = api_key_from_row(rows[0])
    width = key_query().width
    field = SORT_FIELDS[options.sort_by][0]
    files = []
    for row in rows:
        file_id, value, head, metadata, tail = row[width:]
        if file_id is None:  # the LEFT JOIN found no file: an empty page
            break
        files.append(RenderedFile(file_id, field, value, head + metadata_text(metadata) + tail))
    return KeyAndRenderedPage(api_key, _keyset(options).page(files, options.limit))


def _keyset(options: FileListOptions) -> Keyset:
    field, column = SORT_FIELDS[options.sort_by]
    return Keyset(
        field=field,
        column=column,
        descending=options.order == "desc",
        scope=f"files:{options.sort_by}:{options.order}",
    )


@dataclass(frozen=True)
class _Shape:
    """What a page's SQL depends on (the values go in as parameters): one SQL per shape."""

    sort_by: str
    order: str
    limit: int
    status: bool
    path: bool
    root_only: bool
    content_type: bool
    cursor: bool


def _shape(wanted: ListFilters, options: FileListOptions) -> _Shape:
    return _Shape(
        sort_by=options.sort_by,
        order=options.order,
        limit=options.limit,
        status=wanted.status is not None,
        path=wanted.path is not None,
        root_only=wanted.root_only,
        content_type=wanted.content_type is not None,
        cursor=bool(options.cursor),
    )


class _Param(str):
    """A named stand-in for a parameter while a shape's SQL is compiled: the ORM puts it
    where the value goes, and its name says which value to send there."""


def _parameters(names: tuple[_Param, ...], values: dict[str, Any]) -> list[Any]:
    return [values[name] for name in names]


# A word the SQL can hold as a literal without quoting questions (the enum values).
_PLAIN_WORD = re.compile(r"[a-z_]+")
_PLACEHOLDER = re.compile(r"%%|%s")


def _inlined(sql: str, params: Sequence[Any]) -> tuple[str, tuple[_Param, ...]]:
    """``sql`` with each parameter that is a constant of the shape (the ``status <>
    'deleted'`` of a list without ``status``) written into it as a literal, and the names of
    the parameters left. Sent as a parameter, the constant kept PostgreSQL from proving the
    partial indexes' ``WHERE NOT status = 'deleted'`` for a prepared statement's generic plan,
    so it planned the page afresh on every execution (0.35 ms, more than running it)."""
    names: list[_Param] = []
    remaining = iter(params)

    def replace(match: re.Match[str]) -> str:
        if match[0] == "%%":
            return "%%"
        param = next(remaining)
        if isinstance(param, _Param):
            names.append(param)
            return "%s"
        if not isinstance(param, str) or not _PLAIN_WORD.fullmatch(param):
            raise ValueError(f"a shape's constant must be a plain word, not {param!r}")
        return f"'{param}'"

    inlined = _PLACEHOLDER.sub(replace, sql)
    if next(remaining, None) is not None:
        raise ValueError("more parameters than placeholders")
    return inlined, tuple(names)


_VALUES = {
    name: _Param(name)
    for name in ("project", "mode", "status", "path", "content_type", "after_value", "after_id")
}


def _filtered(queryset: FileQuerySet, wanted: ListFilters) -> FileQuerySet:
    if wanted.status is not None:
        queryset = queryset.filter(status=wanted.status)
    else:
        queryset = queryset.visible()
    if wanted.root_only:
        queryset = queryset.filter(path__isnull=True)
    elif wanted.path is not None:
        queryset = queryset.filter(path=wanted.path)
    if wanted.content_type is not None:
        queryset = queryset.filter(content_type=wanted.content_type)
    return queryset


@lru_cache(maxsize=1024)
def _page_sql(shape: _Shape, *, keyed: bool) -> tuple[str, tuple[_Param, ...]]:
    """The SQL of one page of this shape, compiled once by the ORM, and the names of its
    parameters in order. ``keyed``: the key lookup's SQL with the page LEFT JOIN LATERAL'd
    to it, scoped to the key's tenant (project and environment), as file_get_with_key does
    for a single file, and each file as its id, its sort value and its JSON text in three
    parts (files/rendering.py) instead of its columns."""
    if keyed:
        tenant: dict[str, Any] = {
            "project_id": RawSQL('"accounts_apikey"."project_id"', ()),
            "mode": RawSQL('"accounts_apikey"."environment"', ()),
        }
    else:
        tenant = {"project_id": _VALUES["project"], "mode": _VALUES["mode"]}
    queryset: QuerySet[File] = _filtered(File.objects.filter(**tenant), _shape_filters(shape))
    keyset = _keyset(FileListOptions(sort_by=shape.sort_by, order=shape.order))
    if shape.cursor:
        queryset = keyset.after_row(queryset, _VALUES["after_value"], _VALUES["after_id"])
    page = queryset.order_by(*keyset.order_by())[: shape.limit + 1]
    page_sql, params = page.query.sql_with_params()
    _, cols = columns(File)
    if not page_sql.startswith(f"SELECT {cols} FROM "):
        raise ValueError(f"unexpected column list in {page_sql!r}")
    # The stand-ins by name; anything else is a constant of the shape (status <> 'deleted').
    page_sql, names = _inlined(page_sql, params)
    if not keyed:
        return page_sql, names
    key = key_query()
    head, tail = file_json_sql("page")
    selected = f"page.id, page.{keyset.column}, {head}, page.metadata::text, {tail}"
    sql = (
        f"SELECT {key.select}, {selected} FROM {key.joins}"
        f" LEFT JOIN LATERAL ({page_sql}) AS page ON TRUE WHERE {key.where}"
    )
    return sql, (*names, _Param("key_hash"))


def _shape_filters(shape: _Shape) -> ListFilters:
    """Filters with stand-in values, for compiling a shape."""
    return ListFilters(
        status=_VALUES["status"] if shape.status else None,
        path=_VALUES["path"] if shape.path else None,
        root_only=shape.root_only,
        content_type=_VALUES["content_type"] if shape.content_type else None,
    )


def _page_rows(
    wanted: ListFilters, options: FileListOptions, scope: dict[str, Any]
) -> list[tuple[Any, ...]]:
    """The rows of one page of this shape. ``scope``: the tenant's ``project`` and ``mode``,
    or the ``key_hash`` whose tenant the keyed SQL joins (file_list_rendered_with_key)."""
    values: dict[str, Any] = {
        "status": wanted.status,
        "path": wanted.path,
        "content_type": wanted.content_type,
        **scope,
    }
    if options.cursor:
        scope_name = _keyset(options).scope
        values["after_value"], values["after_id"] = decode_cursor(options.cursor, scope_name)
    sql, names = _page_sql(_shape(wanted, options), keyed="key_hash" in scope)
    return fetch_all(sql, _parameters(names, values))


# A search first walks the sort's own index for at most this many rows, looking for a page of
# matches: cheap (3 ms at most over 1M files here) and enough whenever 2% or more match.
SEARCH_WINDOW_ROWS = 5000


def _search_page(
    base: QuerySet[File], term: str, *, keyset: Keyset, limit: int, cursor: str | None
) -> Page[File]:
    """A page of files whose filename contains ``term``, in keyset order.

    PostgreSQL has no statistics for a substring match: it guesses a few hundred matches for
    every term and then picks a plan that is slow for some terms. Fetching and sorting every
    match took 290 ms for a common term (97,000 matches of 1M); walking the sort index until a
    page is found took 530 ms for a term with no match. So the search takes two steps, each
    answering exactly what the plain query would:

    1. Walk the sort index for at most SEARCH_WINDOW_ROWS rows. A page found there is the
       right page, since the window is a prefix of the ordered rows. Common terms end here.
    2. Otherwise matches are rare in this order: fetch every match (through the trigram index
       where pg_trgm exists) and sort them. ``OFFSET 0`` keeps the planner from turning this
       back into a walk of the sort index, the plan that is slow for rare terms.
    """
    after = keyset.after(base, cursor)
    order = keyset.sql_order
    column = keyset.column

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

    matches_sql, params = after.filter(filename__icontains=term).order_by().query.sql_with_params()
    rows = list(
        File.objects.raw(
            f"SELECT matches.* FROM ({matches_sql} OFFSET 0) AS matches"
            f" ORDER BY matches.{column} {order}, matches.id {order} LIMIT {limit + 1}",
            params,
        )
    )
    return keyset.page(rows, limit)


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
