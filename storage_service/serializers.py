"""Shared serializer pieces: strict input (unknown fields refused) and exact JSON types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers
from rest_framework.request import Request

from storage_service.errors import ValidationError


class CleanedField(serializers.Field):
    """A field whose raw JSON value is checked by one ``clean`` function (no coercion)."""

    def __init__(self, clean: Callable[[Any], Any], **kwargs: Any) -> None:
        self.clean = clean
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        return self.clean(data)

    def to_representation(self, value: Any) -> Any:
        return value

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        # An explicit null goes to clean(), which decides whether null means something
        # (root path, cleared metadata) or is invalid.
        if data is serializers.empty:
            return super().validate_empty_values(data)
        return False, data


def strict_int(minimum: int | None = None, maximum: int | None = None) -> Callable[[Any], int]:
    def clean(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise serializers.ValidationError("Must be an integer.")
        if minimum is not None and value < minimum:
            raise serializers.ValidationError(f"Must be at least {minimum}.")
        if maximum is not None and value > maximum:
            raise serializers.ValidationError(f"Must be at most {maximum}.")
        return value

    return clean


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, so a typo ("fileName") is an error, not a no-op."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"body": ["Must be a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """Validate ``data`` or raise the one VALIDATION_ERROR (rendered by storage_service.errors)."""
    serializer = serializer_class(data=data if data is not None else {})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def validated_query(
    serializer_class: type[serializers.Serializer], request: Request
) -> dict[str, Any]:
    """The query string, validated like a body. A parameter given twice is ambiguous: refused
    rather than silently taking one of the values."""
    params = request.query_params
    repeated = [key for key in params if len(params.getlist(key)) > 1]
    if repeated:
        raise ValidationError(
            "A query parameter was given more than once.",
            details={key: ["Given more than once."] for key in repeated},
        )
    return validated(serializer_class, params.dict())
