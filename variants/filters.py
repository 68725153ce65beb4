"""The order of ``GET /v1/files/<id>/variants``."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from storage_service.filtering import FilterSet
from variants.models import Variant


class VariantFilterSet(FilterSet):
    """No filters: every variant of the file, oldest first (ids are time-ordered)."""

    class Meta:
        model = Variant
        fields: list[str] = []

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return super().filter_queryset(queryset).order_by("id")
