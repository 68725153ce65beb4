"""Input validation of the variant endpoints (JSON types exact, unknown fields refused)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from storage_service.serializers import CleanedField, StrictSerializer, strict_int
from variants.imaging import FITS, FORMATS, MAX_DIMENSION, Params


def _choice(choices: tuple[str, ...] | list[str]) -> Any:
    def clean(value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            raise serializers.ValidationError(f"Must be one of: {', '.join(choices)}.")
        return value

    return clean


class TransformRequest(StrictSerializer):
    width = CleanedField(strict_int(1, MAX_DIMENSION), required=False)
    height = CleanedField(strict_int(1, MAX_DIMENSION), required=False)
    fit = CleanedField(_choice(FITS), required=False)
    format = CleanedField(_choice(list(FORMATS)), required=False)
    quality = CleanedField(strict_int(1, 100), required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("width") is None and attrs.get("height") is None:
            raise serializers.ValidationError(
                {
                    "width": ["Give a width, a height, or both."],
                    "height": ["Give a width, a height, or both."],
                }
            )
        return attrs

    @staticmethod
    def params(body: dict[str, Any]) -> Params:
        return Params(
            width=body.get("width"),
            height=body.get("height"),
            fit=body.get("fit", "cover"),
            format=body.get("format", "webp"),
            quality=body.get("quality", 80),
        )


class VariantListQuery(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=100, default=100)
    cursor = serializers.CharField(required=False, max_length=2000)
