"""HTTP only: the contract's "Image variants" section."""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import project_of
from files.serializers import DownloadUrlRequest
from storage_service.serializers import validated, validated_query
from storage_service.timefmt import iso
from variants import services
from variants.serializers import TransformRequest, VariantListQuery


class VariantViewSet(viewsets.ViewSet):
    def transform(self, request: Request, file_id: str) -> Response:
        body = validated(TransformRequest, request.data)
        variant = services.variant_transform(
            project=project_of(request), file_id=file_id, params=TransformRequest.params(body)
        )
        # 202 whether new or not: the work (if any) happens in a worker.
        return Response({"data": services.variant_json(variant)}, status=202)

    def list(self, request: Request, file_id: str) -> Response:
        query = validated_query(VariantListQuery, request)
        page = services.variant_list(
            project=project_of(request),
            file_id=file_id,
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return Response(
            {
                "data": [services.variant_json(v) for v in page.items],
                "pagination": page.pagination_json(),
            }
        )

    def download_url(self, request: Request, file_id: str, variant_id: str) -> Response:
        body = validated(DownloadUrlRequest, request.data)
        download = services.variant_download_url(
            project=project_of(request),
            file_id=file_id,
            variant_id=variant_id,
            expires_in=body.get("expiresInSeconds", 3600),
        )
        return Response({"url": download.url, "expiresAt": iso(download.expires_at)})
