"""JSON in and out of the delivery endpoints."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from delivery.models import DeliveryKey
from delivery.shapes import DeliveryKeyJson
from storage_service.serializers import (
    CleanedField,
    StrictSerializer,
    choice,
    strict_int,
    with_schema,
)
from storage_service.timefmt import iso, iso_required
from variants.imaging import FITS, FORMATS, MAX_DIMENSION

# The formats a delivery URL may ask for: the variants' own, and ``auto`` (chosen by the
# request's Accept when the URL is resolved).
DELIVERY_FORMATS = (*FORMATS, "auto")
MAX_EXPIRES_IN = 31_536_000  # a year
MIN_EXPIRES_IN = 60


class DeliveryTransform(StrictSerializer):
    """The parameters of ``POST …/transform`` (each omitted one takes its default there:
    fit ``cover``, format ``webp``, quality 80), plus ``format: "auto"``."""

    require_any = ("width", "height")

    width = CleanedField(strict_int(1, MAX_DIMENSION), required=False)
    height = CleanedField(strict_int(1, MAX_DIMENSION), required=False)
    fit = CleanedField(choice(FITS), required=False)
    format = CleanedField(choice(DELIVERY_FORMATS), required=False)
    quality = CleanedField(strict_int(1, 100), required=False)


_expires_in = strict_int(MIN_EXPIRES_IN, MAX_EXPIRES_IN)


@with_schema(
    lambda: {
        "type": ["integer", "null"],
        "minimum": MIN_EXPIRES_IN,
        "maximum": MAX_EXPIRES_IN,
        "description": "Seconds the URL stays valid; null or absent: it never expires.",
    }
)
def clean_expires_in(value: Any) -> int | None:
    return None if value is None else _expires_in(value)


@with_schema(lambda: {"type": "integer", "minimum": 1})
def clean_version(value: Any) -> int:
    return strict_int(1)(value)


@with_schema(lambda: {"type": "string", "pattern": "^dk_[0-9a-z]{26}$"})
def clean_key_id(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("dk_") or len(value) > 64:
        raise serializers.ValidationError("Must be a delivery key id (dk_…).")
    return value


class DeliveryUrlRequest(StrictSerializer):
    """Everything optional: ``{}`` signs the file's current version, unchanged, forever, with
    the newest active key."""

    transform = DeliveryTransform(required=False)
    version = CleanedField(clean_version, required=False)
    expiresInSeconds = CleanedField(clean_expires_in, required=False, default=None)
    deliveryKeyId = CleanedField(clean_key_id, required=False)


def delivery_key_json(key: DeliveryKey) -> DeliveryKeyJson:
    return {
        "id": key.id,
        "createdAt": iso_required(key.created_at),
        "revokedAt": iso(key.revoked_at),
    }
