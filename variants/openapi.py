"""The OpenAPI description of image variants (see storage_service/openapi.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema

from storage_service.openapi import (
    COMPONENTS,
    FILE_ID,
    TIMESTAMP,
    body,
    data_of,
    describe,
    nullable,
    obj,
    page_of,
    path_id,
    public_id,
    ref,
    responses,
)
from variants.imaging import FITS, FORMATS, MAX_DIMENSION
from variants.views import VariantViewSet

VARIANT_ID = path_id("variant_id", "var")
DIMENSION = {"type": "integer", "minimum": 1, "maximum": MAX_DIMENSION}
FIT = {"type": "string", "enum": list(FITS)}
FORMAT = {"type": "string", "enum": list(FORMATS)}
QUALITY = {"type": "integer", "minimum": 1, "maximum": 100}
NOT_FOUND = ("FILE_NOT_FOUND", "VALIDATION_ERROR")

COMPONENTS.update(
    {
        "Variant": obj(
            [
                "id",
                "fileId",
                "fileVersion",
                "label",
                "status",
                "params",
                "contentType",
                "width",
                "height",
                "size",
                "failureReason",
                "createdAt",
                "updatedAt",
            ],
            {
                "id": public_id("var"),
                "fileId": public_id("file"),
                "fileVersion": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "The file version the variant is made from.",
                },
                "label": {"type": "string", "example": "w320_h240_cover_webp_q80"},
                "status": {"type": "string", "enum": ["pending", "processing", "ready", "failed"]},
                "params": obj(
                    ["width", "height", "fit", "format", "quality"],
                    {
                        "width": nullable(DIMENSION),
                        "height": nullable(DIMENSION),
                        "fit": FIT,
                        "format": FORMAT,
                        "quality": QUALITY,
                    },
                ),
                "contentType": {
                    "type": "string",
                    "enum": sorted({content_type for _, content_type, _ in FORMATS.values()}),
                },
                "width": nullable({"type": "integer", "minimum": 1, "description": "Once ready."}),
                "height": nullable({"type": "integer", "minimum": 1, "description": "Once ready."}),
                "size": nullable({"type": "integer", "minimum": 0, "description": "Once ready."}),
                "failureReason": nullable({"type": "string"}),
                "createdAt": TIMESTAMP,
                "updatedAt": TIMESTAMP,
            },
        ),
    }
)

describe(
    VariantViewSet,
    transform=extend_schema(
        tags=["variants"],
        summary="Ask for a resized/re-encoded variant of an image (made by a worker)",
        description=(
            "Identical parameters on the same file version answer the same variant and start "
            "no new work. Poll the variant list, or listen for `variant.ready`."
        ),
        parameters=[FILE_ID],
        request=body(
            [],
            {
                "width": DIMENSION,
                "height": DIMENSION,
                "fit": {**FIT, "default": "cover"},
                "format": {**FORMAT, "default": "webp"},
                "quality": {**QUALITY, "default": 80},
            },
            # A width, a height, or both.
            anyOf=[{"required": ["width"]}, {"required": ["height"]}],
        ),
        responses=responses(
            {202: data_of(ref("Variant"))}, *NOT_FOUND, "FILE_NOT_UPLOADED", "NOT_PROCESSABLE"
        ),
    ),
    list=extend_schema(
        tags=["variants"],
        summary="A file's variants, every version's, oldest first (keyset pages)",
        parameters=[
            FILE_ID,
            OpenApiParameter("limit", int, description="1 to 100.", default=100),
            OpenApiParameter(
                "cursor", str, description="The previous page's `nextCursor`, unchanged."
            ),
        ],
        responses=responses({200: page_of(ref("Variant"))}, *NOT_FOUND),
    ),
    download_url=extend_schema(
        tags=["variants"],
        summary="A presigned GET URL for a ready variant",
        parameters=[FILE_ID, VARIANT_ID],
        request=body(
            [],
            {
                "expiresInSeconds": {
                    "type": "integer",
                    "minimum": 60,
                    "maximum": 86400,
                    "default": 3600,
                }
            },
        ),
        responses=responses(
            {200: ref("DownloadUrl")}, *NOT_FOUND, "VARIANT_NOT_FOUND", "VARIANT_NOT_READY"
        ),
    ),
)
