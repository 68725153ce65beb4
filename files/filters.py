"""The filters of ``GET /v1/files``, applied as a django-filter FilterSet over a project's files.

What each filter accepts is defined once, by ``files.serializers.FileListQuery`` (which the
view validates the query with, and the document is built from); this only applies them.
"""

from __future__ import annotations

import django_filters

from files.models import File, FileQuerySet
from files.validation import clean_path


class FileFilter(django_filters.FilterSet):
    # Applied by files.selectors._search_page, which picks a bounded plan for it (a plain
    # icontains filter can take hundreds of milliseconds on a large project).
    search = django_filters.CharFilter(method="defer_search", strip=False)
    path = django_filters.CharFilter(method="filter_path")
    status = django_filters.ChoiceFilter(choices=File.Status.choices, method="filter_status")
    contentType = django_filters.CharFilter(field_name="content_type")

    class Meta:
        model = File
        fields: list[str] = []

    @property
    def qs(self) -> FileQuerySet:
        queryset = super().qs
        # Deleted files are listed only when the trash is asked for explicitly.
        if not self.form.cleaned_data.get("status"):
            queryset = queryset.visible()
        return queryset

    def defer_search(self, queryset: FileQuerySet, name: str, value: str) -> FileQuerySet:
        return queryset

    def filter_path(self, queryset: FileQuerySet, name: str, value: str) -> FileQuerySet:
        cleaned = clean_path(value)
        if cleaned is None:  # "/" asks for root-level files
            return queryset.filter(path__isnull=True)
        return queryset.filter(path=cleaned)

    def filter_status(self, queryset: FileQuerySet, name: str, value: str) -> FileQuerySet:
        return queryset.filter(status=value)
