"""HTTP only: the upload-token endpoints (DESIGN section 7). Routes are in
storage_service/urls.py; the token's use as a credential is uploads/auth.py."""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import tenant_of
from accounts.scopes import scope
from storage_service.filtering import FilterSet
from storage_service.issued import IssuedResourceSchema, IssuedResourceViews
from storage_service.openapi import Links, each, path_id
from storage_service.pagination import CursorPagination
from storage_service.policies import SharedPolicies
from storage_service.serializers import validated
from storage_service.shapes import Data
from uploads import tokens
from uploads.models import UploadToken, UploadTokenQuerySet
from uploads.tokenserializers import UploadTokenCreateRequest, create_arguments, upload_token_json
from uploads.tokenshapes import UploadTokenCreatedJson, UploadTokenJson, UploadTokenRevokedJson


class UploadTokenFilterSet(FilterSet):
    """No filters: the tenant's tokens (the view orders them, served by the
    ``uploadtoken_list`` index)."""

    class Meta:
        model = UploadToken
        fields: list[str] = []


TOKENS = IssuedResourceSchema(
    tag="upload-tokens",
    read=scope("files:read"),
    write=scope("files:write"),
    id_parameter=path_id("token_id", "utk"),
    not_found="UPLOAD_TOKEN_NOT_FOUND",
)


class UploadTokenViewSet(IssuedResourceViews[UploadToken], SharedPolicies, viewsets.GenericViewSet):
    pagination_class = CursorPagination
    filterset_class = UploadTokenFilterSet
    ordering = ("-id",)  # newest first: ids are time-ordered
    cursor_scope = "upload-tokens"
    resource_field, secret_field = "uploadToken", "token"

    def get_queryset(self) -> UploadTokenQuerySet:
        return tokens.upload_token_queryset(tenant=tenant_of(self.request))

    def render(self, resource: UploadToken) -> UploadTokenJson:
        return upload_token_json(resource)

    @TOKENS.create(
        summary="Mint an upload token for a browser (the answer is the only time it is shown)",
        description="The page sends `Authorization: Bearer ut_…` to start uploads "
        "(`POST /v1/files/upload`, `POST /v1/uploads/multipart`), to work on the multipart "
        "uploads it started and to complete the files it started; any other operation "
        "answers 403 `INSUFFICIENT_SCOPE`. Each start is checked against the token's "
        "bounds before anything is written.",
        request=UploadTokenCreateRequest,
        created=Links(
            Data[UploadTokenCreatedJson],
            each(
                ("upload_tokens_retrieve", "upload_tokens_destroy"),
                token_id="$response.body#/data/uploadToken/id",
            ),
        ),
    )
    def create(self, request: Request) -> Response:
        body = validated(UploadTokenCreateRequest, request.data)
        minted = tokens.upload_token_create(tenant=tenant_of(request), **create_arguments(body))
        return self.issued(minted.upload_token, minted.token)

    @TOKENS.list(
        summary="The project's upload tokens, newest first (keyset pages; never the tokens)",
        listed=UploadTokenJson,
    )
    def list(self, request: Request) -> Response:
        return self.paged(self.get_queryset())

    @TOKENS.retrieve(
        summary="Get an upload token (never the token itself)", found=Data[UploadTokenJson]
    )
    def retrieve(self, request: Request, token_id: str) -> Response:
        return self.found(tokens.upload_token_get(tenant=tenant_of(request), token_id=token_id))

    @TOKENS.revoke(
        summary="Revoke an upload token: it stops working at once; revoking twice succeeds",
        description="Uploads it started stay as they are: the application's server may "
        "still complete or delete them with its key.",
        ended=Data[UploadTokenRevokedJson],
    )
    def destroy(self, request: Request, token_id: str) -> Response:
        token = tokens.upload_token_revoke(tenant=tenant_of(request), token_id=token_id)
        return self.ended(token.id)
