"""The filters of ``GET /v1/files/<id>/variants``: none (its view orders it)."""

from __future__ import annotations

from storage_service.filtering import FilterSet
from variants.models import Variant


class VariantFilterSet(FilterSet):
    """No filters: every variant of the file."""

    class Meta:
        model = Variant
        fields: list[str] = []
