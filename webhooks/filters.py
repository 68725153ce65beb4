"""The filters of ``GET /v1/webhooks/<id>/deliveries``: none (its view orders it)."""

from __future__ import annotations

from storage_service.filtering import FilterSet
from webhooks.models import Delivery


class DeliveryFilterSet(FilterSet):
    """No filters: every delivery of the endpoint."""

    class Meta:
        model = Delivery
        fields: list[str] = []
