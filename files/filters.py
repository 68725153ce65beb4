"""The filters of ``GET /v1/files``, as a django-filter FilterSet over a project's files."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from rest_framework import serializers

from files.models import File, FileQuerySet
from files.validation import clean_content_type, clean_path, clean_search


def _form_clean(clean: Any) -> Any:
    """Adapt a DRF-style clean function to a Django form field validator."""

    def validate(value: Any) -> None:
        if value in (None, ""):
            return
        try:
            clean(value)
        except serializers.ValidationError as exc:
            raise forms.ValidationError([str(message) for message in exc.detail]) from exc

    return validate


class FileFilter(django_filters.FilterSet):
    # Validated here, applied by files.selectors._search_page, which picks a bounded plan for
    # it (a plain icontains filter can take hundreds of milliseconds on a large project).
    search = django_filters.CharFilter(
        method="defer_search",
        max_length=255,
        strip=False,
        validators=[_form_clean(clean_search)],
    )
    path = django_filters.CharFilter(
        method="filter_path", max_length=4096, validators=[_form_clean(clean_path)]
    )
    status = django_filters.ChoiceFilter(choices=File.Status.choices, method="filter_status")
    contentType = django_filters.CharFilter(
        field_name="content_type", max_length=255, validators=[_form_clean(clean_content_type)]
    )

    class Meta:
        model = File
        fields: list[str] = []

    def is_valid(self) -> bool:
        valid = super().is_valid()
        # A form's ChoiceField takes "" as "not given", so `?status=` listed everything while
        # `?order=` and `?sortBy=` are refused: an empty status is a bad value like any other.
        if self.data.get("status") == "":
            self.form.add_error(
                "status", f"Must be one of: {', '.join(File.Status.values)}; omit it for all."
            )
            return False
        return valid

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
