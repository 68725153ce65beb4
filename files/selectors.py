"""Read queries for files and folders, each served by one index (see File.Meta.indexes)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypedDict

from django.contrib.postgres.fields import ArrayField
from django.db import connection
from django.db.models import CharField, Count, F, Field, Func, Q, QuerySet, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import StrIndex, Substr, Upper
from django.db.models.lookups import GreaterThan

from accounts.models import ApiKey
from accounts.selectors import KEY_READ, key_hash_of
from accounts.tenancy import Tenant
from files.models import File, FileQuerySet
from storage_service.errors import FileNotFound
from storage_service.ids import looks_like_id

# A timestamp as PostgreSQL's text in the form ``datetime.isoformat`` gives an aware UTC
# datetime, always with microseconds: exact (a cursor can be made of it), and the API's
# form is its first 23 characters and ``Z`` (storage_service/timefmt.py: shown).
_EXACT_UTC = """to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')"""
_TIMESTAMPS = frozenset({"created_at", "updated_at", "expires_at", "uploaded_at", "deleted_at"})


class FileText(NamedTuple):
    """The fields a file object shows (serializers.FileRow), the timestamps as PostgreSQL's
    exact text (``_EXACT_UTC``): a list page's row, which builds no datetime (Django's loader
    costs more per timestamp than the rest of a row)."""

    id: str
    filename: str
    path: str | None
    content_type: str
    size: int
    status: str
    version: int
    metadata: dict[str, Any] | None
    checksum: str | None
    placeholder: str | None
    upload_token_id: str | None
    # The timestamps last: a page reads them as one array (_PAGE_TIMESTAMPS).
    created_at: str | datetime
    updated_at: str | datetime
    expires_at: str | datetime | None
    uploaded_at: str | datetime | None
    deleted_at: str | datetime | None


_PAGE_PLAIN = FileText._fields[: -len(_TIMESTAMPS)]
# A page's five timestamps as one text array: the ORM compiles every expression of a select
# list for each page, and one costs a fifth of five.
_PAGE_TIMESTAMPS = RawSQL(
    "ARRAY["
    + ", ".join(
        _EXACT_UTC % {"expressions": f'"{File._meta.db_table}"."{name}"'}
        for name in FileText._fields[-len(_TIMESTAMPS) :]
    )
    + "]",
    (),
    output_field=ArrayField(CharField()),
)


def file_page(files: QuerySet[File], count: int) -> list[FileText]:
    """The first ``count`` rows of ``files`` (filtered and ordered) as FileText. The last row's
    timestamps are datetimes again: the page's cursor may be made of one of them."""
    page = files.values_list(*_PAGE_PLAIN, _PAGE_TIMESTAMPS)[:count]
    rows = [FileText(*row[:-1], *row[-1]) for row in page]
    if rows:
        last = rows[-1]
        rows[-1] = last._replace(
            created_at=datetime.fromisoformat(str(last.created_at)),
            updated_at=datetime.fromisoformat(str(last.updated_at)),
            expires_at=_exact(last.expires_at),
            uploaded_at=_exact(last.uploaded_at),
            deleted_at=_exact(last.deleted_at),
        )
    return rows


def _exact(value: str | datetime | None) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _column(name: str) -> str:
    field = File._meta.get_field(name)
    assert isinstance(field, Field)
    return field.column


def _shown_columns(table: str) -> str:
    """A file object's columns of the files table named ``table``, the timestamps as the
    list's."""
    return ", ".join(
        _EXACT_UTC % {"expressions": f'{table}."{name}"'}
        if name in _TIMESTAMPS
        else f'{table}."{name}"'
        for name in (_column(field) for field in FileText._fields)
    )


# GET's statement, written out once: the ORM would build and compile the same query for
# every request, which costs more than PostgreSQL's answer. The API key, its project and
# organization, and the file of the key's tenant (NULLs when there is none): one round trip.
_SHOWN_WITH_KEY_SQL = (
    f"SELECT {KEY_READ.columns}, {_shown_columns('f')} FROM {KEY_READ.tables}"
    f' LEFT JOIN "{File._meta.db_table}" f'
    ' ON f."id" = %s AND f."project_id" = k."project_id" AND f."mode" = k."environment"'
    f" WHERE {KEY_READ.condition}"
)
_METADATA_AT = FileText._fields.index("metadata")


def file_shown_with_key(*, raw_key: str, file_id: str) -> tuple[ApiKey, FileText | None] | None:
    """The active API key of a bearer token (as accounts.selectors.api_key_resolve finds it)
    and the visible file ``file_id`` of the key's tenant, read together: None for an unknown
    or revoked key; the key and None when the file is deleted, foreign or unknown."""
    key_hash = key_hash_of(raw_key)
    if key_hash is None:
        return None
    # A malformed id matches no row: the key is still looked up, and the file is 404.
    wanted = file_id if looks_like_id(file_id, "file") else None
    with connection.cursor() as cursor:
        cursor.execute(_SHOWN_WITH_KEY_SQL, [wanted, key_hash])
        row = cursor.fetchone()
    if row is None:
        return None
    file_row = row[KEY_READ.width :]
    # A file's id is never NULL: a NULL one is the LEFT JOIN's missing file.
    file = None if file_row[0] is None else _visible(file_row)
    return KEY_READ.api_key(row, connection), file


def _visible(row: Sequence[Any]) -> FileText | None:
    """A file object's row as FileText; None for a deleted file."""
    file = FileText(*row)
    if file.status == File.Status.DELETED:
        return None
    # Django reads jsonb as its text and JSONField decodes it: so here.
    text = row[_METADATA_AT]
    return file._replace(metadata=None if text is None else json.loads(text))


def file_get(*, tenant: Tenant, file_id: str) -> File:
    """A visible file of the tenant; deleted, foreign (another project or mode) and unknown
    files are all 404."""
    # A malformed id is a plain 404 without touching the database.
    if looks_like_id(file_id, "file"):
        # By primary key: at most one row, so get(), without first()'s ORDER BY; a deleted
        # file told by the status read rather than by one more condition (visible()'s
        # exclude) the ORM compiles each request. The whole instance costs less to ask for
        # than a values_list() of the fields a file object shows.
        try:
            file = File.objects.for_tenant(tenant).get(id=file_id)
        except File.DoesNotExist:
            pass
        else:
            if file.status != File.Status.DELETED:
                file.project = tenant.project
                return file
    raise FileNotFound("No such file.")


# A search first walks the sort's own index for at most this many rows, looking for a page of
# matches: cheap (3 ms at most over 1M files here) and enough whenever 2% or more match.
SEARCH_WINDOW_ROWS = 5000


def file_search_page(
    files: QuerySet[File], term: str, count: int, *, ordering: Sequence[str]
) -> list[FileText]:
    """The first ``count`` files of ``files`` (filtered, after the cursor, in the keyset order
    ``ordering``) whose filename contains ``term``, case-insensitively, as file_page gives
    them.

    PostgreSQL has no statistics for a substring match: it guesses a few hundred matches for
    every term and then picks a plan that is slow for some terms. Fetching and sorting every
    match is slow for a common term (97,000 matches of 1M); walking the sort index until a
    page is found is slow for a term with no match. So the search takes two steps, each
    answering exactly what the plain query would:

    1. Walk the sort index for at most SEARCH_WINDOW_ROWS rows: the window's last row bounds
       the walk, and the match is a ``strpos`` no index serves, so the walk is the only plan.
       A page found there is the right page, since the window is a prefix of the ordered
       rows; a window that reached the last row found every match. Common terms end here.
    2. Otherwise matches are rare in this order: fetch every match (through the trigram index
       where pg_trgm exists) and sort them. The order asks for the NULLs the other way round
       from the indexes' (the sort columns are NOT NULL, so the order is the same): no index
       holds it, so the planner cannot turn this back into a walk of the sort index.
    """
    sort, field, tiebreak = ordering[0], ordering[0].lstrip("-"), ordering[-1].lstrip("-")
    if SEARCH_WINDOW_ROWS > 0:
        last = files.values_list(field, tiebreak)[SEARCH_WINDOW_ROWS - 1 : SEARCH_WINDOW_ROWS]
        bound = next(iter(last), None)
        window = files if bound is None else files.filter(_at_or_before(sort, tiebreak, *bound))
        contains: GreaterThan[int] = GreaterThan(StrIndex(Upper("filename"), Upper(Value(term))), 0)
        rows = file_page(window.filter(contains), count)
        if len(rows) >= count or bound is None:
            return rows
    descending = sort.startswith("-")
    sorted_apart = [
        F(key).desc(nulls_last=True) if descending else F(key).asc(nulls_first=True)
        for key in (field, tiebreak)
    ]
    return file_page(files.filter(filename__icontains=term).order_by(*sorted_apart), count)


def _at_or_before(sort: str, tiebreak: str, value: Any, row_id: str) -> Q:
    """The rows up to and including the one of ``(value, row_id)`` in the order ``(sort,
    tiebreak)``, written as the paginator writes a cursor's bound, for the index range."""
    field = sort.lstrip("-")
    before, at_or_before = ("gt", "gte") if sort.startswith("-") else ("lt", "lte")
    return Q(**{f"{field}__{at_or_before}": value}) & (
        Q(**{f"{field}__{before}": value}) | Q(**{f"{tiebreak}__{at_or_before}": row_id})
    )


class FolderRow(TypedDict):
    name: str
    file_count: int


def child_folders(files: FileQuerySet, *, parent: str | None) -> QuerySet[File, FolderRow]:
    """The direct child folders of ``parent`` (None: the root) among ``files``, by name.

    Folders are derived from the paths of visible files: a folder exists while a file is in
    it or below it, and ``file_count`` counts those files. The prefix match is served by the
    ``(project, mode, path)`` index.
    """
    below: Func | F
    if parent is None:
        files, below = files.filter(path__isnull=False), F("path")
    else:
        files, below = files.filter(path__startswith=f"{parent}/"), Substr("path", len(parent) + 2)
    name = Func(below, Value("/"), Value(1), function="split_part", output_field=CharField())
    rows = (
        files.visible()
        .annotate(name=name)
        .exclude(name="")
        .values("name")
        .annotate(file_count=Count("id"))
        .order_by("name")
    )
    return rows  # type: ignore[return-value]  # the dicts of .values() are FolderRows
