"""HTTP only: the contract's "Image variants" section."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import tenant_of
from accounts.scopes import scope
from files.openapi import FILE_ID
from files.selectors import file_get
from files.serializers import DownloadUrlRequest, download_url_json
from files.shapes import DownloadUrlJson
from storage_service.openapi import Links, Shape, errors_of, path_id
from storage_service.pagination import CursorPagination
from storage_service.policies import SharedPolicies
from storage_service.serializers import validated
from storage_service.shapes import Data
from variants import services
from variants.filters import VariantFilterSet
from variants.models import Variant
from variants.serializers import TransformRequest, variant_json
from variants.shapes import VariantJson

VARIANT_ID = path_id("variant_id", "var")
NOT_FOUND = ("FILE_NOT_FOUND",)


class VariantViewSet(SharedPolicies, viewsets.GenericViewSet):
    pagination_class = CursorPagination
    filterset_class = VariantFilterSet
    page_size = 100
    ordering = ("id",)  # oldest first: ids are time-ordered
    cursor_scope = "variants"
    queryset = Variant.objects.all()  # list() narrows it to the file's

    @extend_schema(
        extensions=scope("files:write"),
        tags=["variants"],
        summary="Ask for a resized/re-encoded variant of an image (made by a worker)",
        description="Identical parameters on the same file version answer the same variant "
        "(pending, ready or failed) and start no new work. Poll the variant list, or listen "
        "for `file.processed` / `file.processing_failed`. Eligible: files whose stored bytes "
        "are JPEG, PNG, WebP, AVIF, GIF or TIFF, of at most "
        f"{settings.SERVICE_VARIANT_MAX_SOURCE_BYTES} bytes (else `NOT_PROCESSABLE`). A file "
        f"version has at most {settings.SERVICE_VARIANT_MAX_PER_VERSION} distinct variants "
        "(the thumbnail included); a new one beyond answers `VARIANT_LIMIT_REACHED`, while "
        "asking again for an existing one still answers it. An image is never enlarged more "
        f"than {settings.SERVICE_VARIANT_MAX_UPSCALE}x: a larger box is shrunk, keeping its "
        "shape, and the variant's `width` and `height` say what was made.",
        parameters=[FILE_ID],
        request=TransformRequest,
        responses={
            202: Links(
                Data[VariantJson],
                {
                    "variants_download_url": {
                        "file_id": "$request.path.file_id",
                        "variant_id": "$response.body#/data/id",
                    }
                },
            ),
            **errors_of(
                *NOT_FOUND, "FILE_NOT_UPLOADED", "VARIANT_LIMIT_REACHED", "NOT_PROCESSABLE"
            ),
        },
    )
    def transform(self, request: Request, file_id: str) -> Response:
        body = validated(TransformRequest, request.data)
        variant = services.variant_transform(
            tenant=tenant_of(request), file_id=file_id, params=TransformRequest.params(body)
        )
        # 202 whether new or not: the work (if any) happens in a worker.
        answer: Data[VariantJson] = {"data": variant_json(variant)}
        return Response(answer, status=202)

    @extend_schema(
        extensions=scope("files:read"),
        tags=["variants"],
        summary="A file's variants, every version's, oldest first (keyset pages)",
        parameters=[FILE_ID],
        responses={200: Shape(VariantJson), **errors_of(*NOT_FOUND)},
    )
    def list(self, request: Request, file_id: str) -> Response:
        # The query's refusals (400) come before the file's (404), as a body's do elsewhere.
        variants = self.filter_queryset(self.get_queryset())
        file = file_get(tenant=tenant_of(request), file_id=file_id)
        page = self.paginate_queryset(variants.filter(file=file))
        assert page is not None  # pagination_class is set
        return self.get_paginated_response([variant_json(variant) for variant in page])

    @extend_schema(
        extensions=scope("files:read"),
        tags=["variants"],
        summary="A presigned GET URL for a ready variant",
        description="Served with its content type, as `<filename stem>_<label>.<ext>`. "
        "Counts as bandwidth.",
        parameters=[FILE_ID, VARIANT_ID],
        request=DownloadUrlRequest,
        responses={
            200: Shape(DownloadUrlJson),
            **errors_of(*NOT_FOUND, "VARIANT_NOT_FOUND", "VARIANT_NOT_READY"),
        },
    )
    def download_url(self, request: Request, file_id: str, variant_id: str) -> Response:
        body = validated(DownloadUrlRequest, request.data)
        download = services.variant_download_url(
            tenant=tenant_of(request),
            file_id=file_id,
            variant_id=variant_id,
            expires_in=body["expiresInSeconds"],
        )
        answer: DownloadUrlJson = download_url_json(download)
        return Response(answer)
