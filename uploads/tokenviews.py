"""HTTP only: the upload-token endpoints (DESIGN section 7). Routes are in
storage_service/urls.py; the token's use as a credential is uploads/auth.py."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import tenant_of
from accounts.scopes import scope
from storage_service.filtering import FilterSet
from storage_service.openapi import Links, Shape, each, errors_of, path_id
from storage_service.pagination import CursorPagination
from storage_service.serializers import validated
from storage_service.shapes import Data
from uploads import tokens
from uploads.models import UploadToken, UploadTokenQuerySet
from uploads.tokenserializers import UploadTokenCreateRequest, create_arguments, upload_token_json
from uploads.tokenshapes import UploadTokenCreatedJson, UploadTokenJson, UploadTokenRevokedJson

UPLOAD_TOKEN_ID = path_id("token_id", "utk")
NOT_FOUND = ("UPLOAD_TOKEN_NOT_FOUND",)


class UploadTokenFilterSet(FilterSet):
    """No filters: the tenant's tokens, newest first (ids are time-ordered), served by the
    ``uploadtoken_list`` index."""

    class Meta:
        model = UploadToken
        fields: list[str] = []

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return super().filter_queryset(queryset).order_by("-id")


class UploadTokenViewSet(viewsets.GenericViewSet):
    pagination_class = CursorPagination
    filterset_class = UploadTokenFilterSet
    cursor_scope = "upload-tokens"

    def get_queryset(self) -> UploadTokenQuerySet:
        return tokens.upload_token_queryset(tenant=tenant_of(self.request))

    @extend_schema(
        tags=["upload-tokens"],
        extensions=scope("files:write"),
        summary="Mint an upload token for a browser (the answer is the only time it is shown)",
        description="The page sends `Authorization: Bearer ut_…` to start uploads "
        "(`POST /v1/files/upload`, `POST /v1/uploads/multipart`), to work on the multipart "
        "uploads it started and to complete the files it started; any other operation "
        "answers 403 `INSUFFICIENT_SCOPE`. Each start is checked against the token's "
        "bounds before anything is written.",
        request=UploadTokenCreateRequest,
        responses={
            201: Links(
                Data[UploadTokenCreatedJson],
                each(
                    ("upload_tokens_retrieve", "upload_tokens_destroy"),
                    token_id="$response.body#/data/uploadToken/id",
                ),
            ),
        },
    )
    def create(self, request: Request) -> Response:
        body = validated(UploadTokenCreateRequest, request.data)
        minted = tokens.upload_token_create(tenant=tenant_of(request), **create_arguments(body))
        answer: Data[UploadTokenCreatedJson] = {
            "data": {"uploadToken": upload_token_json(minted.upload_token), "token": minted.token}
        }
        return Response(answer, status=201)

    @extend_schema(
        tags=["upload-tokens"],
        extensions=scope("files:read"),
        summary="The project's upload tokens, newest first (keyset pages; never the tokens)",
        responses={200: Shape(UploadTokenJson)},
    )
    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None  # pagination_class is set
        return self.get_paginated_response([upload_token_json(token) for token in page])

    @extend_schema(
        tags=["upload-tokens"],
        extensions=scope("files:read"),
        summary="Get an upload token (never the token itself)",
        parameters=[UPLOAD_TOKEN_ID],
        responses={200: Shape(Data[UploadTokenJson]), **errors_of(*NOT_FOUND)},
    )
    def retrieve(self, request: Request, token_id: str) -> Response:
        token = tokens.upload_token_get(tenant=tenant_of(request), token_id=token_id)
        answer: Data[UploadTokenJson] = {"data": upload_token_json(token)}
        return Response(answer)

    @extend_schema(
        tags=["upload-tokens"],
        extensions=scope("files:write"),
        summary="Revoke an upload token: it stops working at once; revoking twice succeeds",
        description="Uploads it started stay as they are: the application's server may "
        "still complete or delete them with its key.",
        parameters=[UPLOAD_TOKEN_ID],
        responses={200: Shape(Data[UploadTokenRevokedJson]), **errors_of(*NOT_FOUND)},
    )
    def destroy(self, request: Request, token_id: str) -> Response:
        token = tokens.upload_token_revoke(tenant=tenant_of(request), token_id=token_id)
        answer: Data[UploadTokenRevokedJson] = {"data": {"id": token.id, "revoked": True}}
        return Response(answer)
