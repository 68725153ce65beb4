"""Shared serializer pieces: strict input (unknown fields refused) and exact JSON types.

Every input field is a ``CleanedField`` whose ``clean`` function both enforces the rule and,
through ``with_schema``, states it as JSON Schema: the OpenAPI document reads the statement
from the function that enforces it (storage_service/openapi/), so the two cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from rest_framework import serializers

from storage_service.errors import ValidationError

Schema = dict[str, Any]
Clean = TypeVar("Clean", bound=Callable[..., Any])


def with_schema(schema: Callable[[], Schema]) -> Callable[[Clean], Clean]:
    """Attach the JSON Schema of what ``clean`` accepts. A callable, so the limits that are
    settings are read when the document is built, not at import."""

    def attach(clean: Clean) -> Clean:
        clean.json_schema = schema  # type: ignore[attr-defined]
        return clean

    return attach


def json_schema(clean: Callable[..., Any]) -> Schema:
    schema = getattr(clean, "json_schema", None)
    if schema is None:
        raise TypeError(f"{clean!r} does not state its JSON Schema (use @with_schema)")
    return dict(schema())


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


def json_integer(value: Any) -> int | None:
    """``value`` as an integer if JSON Schema calls it one, else None.

    JSON Schema's "integer" is a number with no fractional part, so ``12.0`` is one (and
    generated clients and fuzzers send it); ``"12"``, ``12.5`` and ``true`` are not.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def strict_int(minimum: int | None = None, maximum: int | None = None) -> Callable[[Any], int]:
    """A JSON integer (not "12", 12.5 or true) within the bounds."""

    def clean(raw: Any) -> int:
        value = json_integer(raw)
        if value is None:
            raise serializers.ValidationError("Must be an integer.")
        if minimum is not None and value < minimum:
            raise serializers.ValidationError(f"Must be at least {minimum}.")
        if maximum is not None and value > maximum:
            raise serializers.ValidationError(f"Must be at most {maximum}.")
        return value

    schema: Schema = {"type": "integer"}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return with_schema(lambda: schema)(clean)


def choice(choices: list[str] | tuple[str, ...]) -> Callable[[Any], str]:
    """One of ``choices``, exactly (no case folding, no stripping)."""

    def clean(value: Any) -> str:
        if not isinstance(value, str) or value not in choices:
            raise serializers.ValidationError(f"Must be one of: {', '.join(choices)}.")
        return value

    return with_schema(lambda: {"type": "string", "enum": list(choices)})(clean)


# --- Query strings ---------------------------------------------------------------------


# Query strings are text: a number is its decimal digits (an optional ".0" aside, which JSON
# Schema counts as the same integer).
def query_int(minimum: int, maximum: int) -> Any:
    def schema() -> Schema:
        return {"type": "integer", "minimum": minimum, "maximum": maximum}

    @with_schema(schema)
    def clean(value: Any) -> int:
        text = str(value)
        whole, _, fraction = text.partition(".")
        digits = whole[1:] if whole.startswith("-") else whole
        if not (digits.isascii() and digits.isdigit()) or fraction.strip("0") != "":
            raise serializers.ValidationError("Must be an integer.")
        number = int(whole)
        if not minimum <= number <= maximum:
            raise serializers.ValidationError(f"Must be from {minimum} to {maximum}.")
        return number

    return clean


@with_schema(lambda: {"type": "string", "minLength": 1, "maxLength": 2000})
def clean_cursor(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 2000:
        raise serializers.ValidationError("Pass the previous page's nextCursor, unchanged.")
    return value


def in_query(clean: Any) -> Any:
    """A body rule used for a query parameter, which is always text: never null."""

    def schema() -> Schema:
        rule = json_schema(clean)
        if isinstance(rule.get("type"), list):
            kinds = [kind for kind in rule["type"] if kind != "null"]
            rule["type"] = kinds[0] if len(kinds) == 1 else kinds
        return rule

    return with_schema(schema)(lambda value: clean(value))


def or_empty(clean: Any, meaning: str) -> Any:
    """A query filter where an empty value means "not given" (``?path=`` lists everything)."""

    def schema() -> Schema:
        rule = json_schema(in_query(clean))
        description = rule.pop("description", "")
        return {
            "anyOf": [rule, {"type": "string", "maxLength": 0}],
            "description": f"{description} Empty: {meaning}".strip(),
        }

    @with_schema(schema)
    def clean_or_empty(value: Any) -> Any:
        return None if value == "" else clean(value)

    return clean_or_empty


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, so a typo ("fileName") is an error, not a no-op.

    Whole-body rules are class attributes, enforced here and stated in the document by
    ``StrictSerializerExtension``: ``min_fields`` (at least that many fields present) and
    ``require_any`` (at least one of these fields present and not null).
    """

    min_fields: ClassVar[int] = 0
    require_any: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def body_required(cls) -> bool:
        """Whether an absent body is refused."""
        required = any(field.required for field in cls().fields.values())
        return required or cls.min_fields > 0 or bool(cls.require_any)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"body": ["Must be a JSON object."]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if len(attrs) < self.min_fields:
            names = ", ".join(self.fields)
            raise serializers.ValidationError({"body": [f"Send at least one of {names}."]})
        if self.require_any and all(attrs.get(name) is None for name in self.require_any):
            message = f"Give {' or '.join(self.require_any)} (or both)."
            raise serializers.ValidationError({name: [message] for name in self.require_any})
        return attrs


class EmptyRequest(StrictSerializer):
    """A POST that takes no body: none, or ``{}``; any field is an error."""


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """Validate ``data`` or raise the one VALIDATION_ERROR (rendered by storage_service.errors).

    An absent body is ``{}`` here (DRF's empty data); a JSON ``null`` body is not an object,
    and is refused like any other non-object."""
    if data is None:
        raise ValidationError(
            "The request is invalid.", details={"body": ["Must be a JSON object."]}
        )
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


@with_schema(
    lambda: {"type": "string", "format": "date-time", "example": "2026-11-22T03:55:04.086Z"}
)
def clean_timestamp(value: Any) -> datetime:
    """An RFC 3339 timestamp with its offset (``Z`` or ``±hh:mm``), as the API writes them."""
    if not isinstance(value, str) or not 10 <= len(value) <= 40:
        raise serializers.ValidationError("Must be a timestamp like 2026-11-22T03:55:04.086Z.")
    try:
        parsed = datetime.fromisoformat(value)
        # In UTC: the extreme years with an offset do not fit, and are refused here.
        in_utc = parsed.astimezone(UTC) if parsed.tzinfo is not None else None
    except (ValueError, OverflowError):
        in_utc = None
    if in_utc is None or "T" not in value.upper():
        raise serializers.ValidationError(
            "Must be a timestamp with its offset, like 2026-11-22T03:55:04.086Z."
        )
    return in_utc
