"""The filters and the order of ``GET /v1/files`` and ``GET /v1/folders``."""

from __future__ import annotations

from typing import Any

from files import selectors
from files.finding import (
    clean_metadata_param,
    clean_recursive,
    metadata_filters_of,
    metadata_q,
    subtree_q,
)
from files.models import File, FileQuerySet
from files.validation import clean_content_type, clean_path, clean_search
from storage_service.filtering import CleanedFilter, FilterSet
from storage_service.serializers import choice, in_query, or_empty, with_schema

# sortBy: the File field each sort orders by (then by id), each served by its own index.
SORT_FIELDS = {
    "createdAt": "created_at",
    "updatedAt": "updated_at",
    "filename": "filename",
    "size": "size",
}


def file_ordering(sort_by: str, order: str) -> tuple[str, str]:
    """The keyset order of a file list sorted by ``sortBy`` (validated) in ``order``."""
    prefix = "-" if order == "desc" else ""
    return f"{prefix}{SORT_FIELDS[sort_by]}", f"{prefix}id"


class _Root:
    """``path=/``: the files at the root (a null path)."""


ROOT = _Root()
_folder = or_empty(clean_path, "no filter.")


@with_schema(_folder.json_schema)
def clean_folder(value: Any) -> str | _Root | None:
    """A folder to list; ``/`` is the root (``ROOT``), empty is no filter (None)."""
    cleaned = _folder(value)
    return ROOT if cleaned is None and value != "" else cleaned


class FileFilterSet(FilterSet):
    """Deleted files are left out unless ``status=deleted`` asks for them (the trash). Every
    filter combined with every sort is served by the index of that sort; ``search`` is
    applied by the page's own plan (files/selectors.py: file_search_page), because a plain
    substring filter can take hundreds of milliseconds on a large project."""

    search = CleanedFilter(
        or_empty(clean_search, "no filter."),
        method="search_in_page",
        help_text="Case-insensitive substring of the filename (`%` and `_` are literal).",
    )
    path = CleanedFilter(
        clean_folder, method="in_folder", help_text="Exact folder; `/` lists root-level files."
    )
    status = CleanedFilter(
        choice(File.Status.values),
        field_name="status",
        help_text="Deleted files are listed only with `status=deleted` (the trash).",
    )
    contentType = CleanedFilter(
        or_empty(clean_content_type, "no filter."),
        field_name="content_type",
        help_text="Exact MIME type.",
    )
    metadata = CleanedFilter(
        clean_metadata_param,
        method="with_metadata",
        help_text="`metadata[<key>]=<value>` (up to 10, all must match): files whose metadata "
        "has the top-level key with the string value, or the number or boolean whose JSON "
        'text it is (`metadata[year]=2026` matches 2026 and "2026").',
    )
    recursive = CleanedFilter(
        clean_recursive,
        method="with_recursive",
        help_text="With `path`: the folder and every folder below it (`path=/`: every file).",
    )
    sortBy = CleanedFilter(choice(list(SORT_FIELDS)), method="in_order", default="createdAt")
    order = CleanedFilter(choice(["asc", "desc"]), method="in_order", default="desc")

    class Meta:
        model = File
        fields: list[str] = []

    def filter_queryset(self, queryset: FileQuerySet) -> FileQuerySet:
        queryset = super().filter_queryset(queryset)
        # metadata[<key>] parameters have names of their own, so they are read here.
        wanted = metadata_filters_of(self.data)
        if wanted:
            queryset = queryset.filter(metadata_q(wanted))
        if not self.form.cleaned_data.get("status"):
            queryset = queryset.visible()
        return queryset

    def search_in_page(self, queryset: FileQuerySet, name: str, value: str) -> FileQuerySet:
        return queryset

    def in_folder(self, queryset: FileQuerySet, name: str, value: Any) -> FileQuerySet:
        if self.form.cleaned_data.get("recursive"):
            # The root and every folder below it is every file.
            return queryset if value is ROOT else queryset.filter(subtree_q(value))
        if value is ROOT:
            return queryset.filter(path__isnull=True)
        return queryset.filter(path=value)

    def with_metadata(self, queryset: FileQuerySet, name: str, value: Any) -> FileQuerySet:
        return queryset  # clean_metadata_param refuses a bare metadata=; see filter_queryset

    def with_recursive(self, queryset: FileQuerySet, name: str, value: Any) -> FileQuerySet:
        return queryset  # applied by in_folder

    def in_order(self, queryset: FileQuerySet, name: str, value: str) -> FileQuerySet:
        return queryset  # the page's order: file_ordering, which the paginator applies


class FolderFilterSet(FilterSet):
    """The direct child folders of ``parent`` (the root without one), by name."""

    parent = CleanedFilter(
        in_query(clean_path),
        method="children_of",
        help_text="A folder (`''` and `/` are the root, as when omitted).",
    )

    class Meta:
        model = File
        fields: list[str] = []

    def filter_queryset(self, queryset: FileQuerySet) -> Any:
        return selectors.child_folders(queryset, parent=self.form.cleaned_data.get("parent"))

    def children_of(self, queryset: FileQuerySet, name: str, value: str) -> FileQuerySet:
        return queryset  # applied by filter_queryset, the root included
