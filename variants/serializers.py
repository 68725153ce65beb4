"""Input validation of the variant endpoints (JSON types exact, unknown fields refused)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from storage_service.serializers import (
    CleanedField,
    StrictSerializer,
    choice,
    clean_cursor,
    query_int,
    strict_int,
)
from variants.imaging import FITS, FORMATS, MAX_DIMENSION, Params


class TransformRequest(StrictSerializer):
    """A width, a height, or both (each 1 to 4096 pixels); with one side only, every fit
    keeps the aspect ratio."""

    require_any = ("width", "height")

    width = CleanedField(strict_int(1, MAX_DIMENSION), required=False)
    height = CleanedField(strict_int(1, MAX_DIMENSION), required=False)
    fit = CleanedField(choice(FITS), required=False, default="cover")
    format = CleanedField(choice(list(FORMATS)), required=False, default="webp")
    quality = CleanedField(strict_int(1, 100), required=False, default=80)

    @staticmethod
    def params(body: dict[str, Any]) -> Params:
        return Params(
            width=body.get("width"),
            height=body.get("height"),
            fit=body["fit"],
            format=body["format"],
            quality=body["quality"],
        )


class VariantListQuery(serializers.Serializer):
    limit = CleanedField(query_int(1, 100), required=False, default=100)
    cursor = CleanedField(clean_cursor, required=False)
