"""JSON in and out of the variant endpoints: the transform request (JSON types exact, unknown
fields refused) and the variant as the API shows it."""

from __future__ import annotations

from typing import Any, cast

from storage_service.serializers import (
    CleanedField,
    StrictSerializer,
    choice,
    strict_int,
)
from storage_service.timefmt import iso_required
from variants import imaging
from variants.imaging import FITS, FORMATS, MAX_DIMENSION, Params
from variants.models import Variant
from variants.shapes import Fit, Format, OutputType, VariantJson, VariantStatus


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


# --- Output --------------------------------------------------------------------------------


def variant_json(variant: Variant) -> VariantJson:
    """The variant as the API shows it (and as the processing events carry it)."""
    return {
        "id": variant.id,
        "fileId": variant.file_id,
        "fileVersion": variant.version,
        "label": variant.label,
        "status": cast(VariantStatus, variant.status),
        "params": {
            "width": variant.width,
            "height": variant.height,
            "fit": cast(Fit, variant.fit),
            "format": cast(Format, variant.format),
            "quality": variant.quality,
        },
        "contentType": cast(OutputType, imaging.FORMATS[variant.format][1]),
        "width": variant.output_width,
        "height": variant.output_height,
        "size": variant.size,
        "failureReason": variant.failure_reason or None,
        "createdAt": iso_required(variant.created_at),
        "updatedAt": iso_required(variant.updated_at),
    }
