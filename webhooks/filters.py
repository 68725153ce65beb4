"""The filters and the order of ``GET /v1/webhooks/<id>/deliveries``."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from storage_service.filtering import FilterSet
from webhooks.models import Delivery


class DeliveryFilterSet(FilterSet):
    """No filters: every delivery of the endpoint, newest first (ids are time-ordered)."""

    class Meta:
        model = Delivery
        fields: list[str] = []

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return super().filter_queryset(queryset).order_by("-id")
