"""What the upload-token endpoints answer (see storage_service/openapi/)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from files.shapes import Bytes
from storage_service.openapi import JsonSchema, id_schema
from storage_service.shapes import Timestamp

UploadTokenId = Annotated[str, id_schema("utk")]


class UploadTokenJson(TypedDict):
    """An upload token's bounds and use. ``path`` null: the root (any folder);
    ``maxFileSizeBytes``, ``allowedContentTypes``, ``allowedOrigins`` null: no bound beyond
    the project's own limits."""

    id: UploadTokenId
    path: str | None
    maxFileSizeBytes: Bytes | None
    allowedContentTypes: list[str] | None
    maxFiles: Annotated[int, JsonSchema(minimum=1, maximum=10000)]
    filesStarted: Annotated[int, JsonSchema(minimum=0, maximum=10000)]
    allowedOrigins: list[str] | None
    metadata: dict[str, Any] | None
    expiresAt: Timestamp
    revokedAt: Timestamp | None
    createdAt: Timestamp


class UploadTokenCreatedJson(TypedDict):
    """The token object and the token itself (``ut_…``), shown this once: hand it to the
    page that uploads."""

    uploadToken: UploadTokenJson
    token: Annotated[str, JsonSchema(pattern=r"^ut_[A-Za-z0-9_-]{43}$")]


class UploadTokenRevokedJson(TypedDict):
    id: UploadTokenId
    revoked: Literal[True]
