"""The OpenAPI description of multipart uploads (see storage_service/openapi.py)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema

from storage_service.openapi import (
    COMPONENTS,
    CONTENT_TYPE,
    FILENAME,
    IDEMPOTENCY_KEY,
    METADATA,
    PATH,
    TIMESTAMP,
    body,
    data_of,
    describe,
    obj,
    path_id,
    public_id,
    ref,
    responses,
)
from uploads.sizing import MAX_PARTS
from uploads.views import MultipartUploadViewSet

UPLOAD_ID = path_id("upload_id", "upload")
PART_NUMBER = {"type": "integer", "minimum": 1, "maximum": MAX_PARTS}
NOT_FOUND = ("UPLOAD_NOT_FOUND",)

COMPONENTS.update(
    {
        "PresignedPart": obj(
            ["partNumber", "url", "expiresAt"],
            {
                "partNumber": PART_NUMBER,
                "url": {"type": "string", "format": "uri", "description": "Presigned PUT URL."},
                "expiresAt": TIMESTAMP,
            },
        ),
        "MultipartSession": obj(
            [
                "id",
                "fileId",
                "status",
                "size",
                "partSize",
                "partCount",
                "parts",
                "expiresAt",
                "createdAt",
            ],
            {
                "id": public_id("upload"),
                "fileId": public_id("file"),
                "status": {"type": "string", "enum": ["active", "aborted", "completed"]},
                "size": {"type": "integer", "minimum": 1},
                "partSize": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Every part but the last is exactly this many bytes.",
                },
                "partCount": {"type": "integer", "minimum": 1, "maximum": MAX_PARTS},
                "parts": {
                    "type": "array",
                    "items": ref("PresignedPart"),
                    "description": "A presigned PUT for every part, 1 to partCount.",
                },
                "expiresAt": TIMESTAMP,
                "createdAt": TIMESTAMP,
            },
        ),
        "HeldPart": obj(
            ["partNumber", "etag", "size"],
            {
                "partNumber": PART_NUMBER,
                "etag": {"type": "string"},
                "size": {"type": "integer", "minimum": 0},
            },
        ),
    }
)

describe(
    MultipartUploadViewSet,
    create=extend_schema(
        tags=["uploads"],
        summary="Start a multipart upload",
        description=(
            "Creates a pending file and an upload session with a presigned PUT for every part. "
            "PUT each part's bytes, keep each response's ETag, then call complete. An "
            "`Idempotency-Key` header makes retries safe: a replay answers the same file and "
            "session as they are now, with fresh part URLs, and `Idempotent-Replayed: true`."
        ),
        parameters=[IDEMPOTENCY_KEY],
        request=body(
            ["filename", "contentType", "size"],
            {
                "filename": FILENAME,
                "contentType": CONTENT_TYPE,
                "size": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Bytes; at most "
                    f"{settings.SERVICE_MAX_MULTIPART_UPLOAD_BYTES} (a setting).",
                },
                "path": PATH,
                "metadata": METADATA,
            },
        ),
        responses=responses(
            {
                201: data_of(
                    obj(
                        ["file", "upload"], {"file": ref("File"), "upload": ref("MultipartSession")}
                    )
                )
            },
            "VALIDATION_ERROR",
            "FILE_TOO_LARGE",
            "IDEMPOTENCY_KEY_REUSED",
            "STORAGE_UNAVAILABLE",
        ),
    ),
    sign_parts=extend_schema(
        tags=["uploads"],
        summary="Fresh presigned PUT URLs for some parts of an active upload",
        parameters=[UPLOAD_ID],
        request=body(
            ["partNumbers"],
            {
                "partNumbers": {
                    "type": "array",
                    "items": PART_NUMBER,
                    "minItems": 1,
                    "maxItems": MAX_PARTS,
                    "uniqueItems": True,
                }
            },
        ),
        responses=responses(
            {
                200: data_of(
                    obj(
                        ["id", "parts"],
                        {
                            "id": public_id("upload"),
                            "parts": {"type": "array", "items": ref("PresignedPart")},
                        },
                    )
                )
            },
            *NOT_FOUND,
            "VALIDATION_ERROR",
            "UPLOAD_NOT_ACTIVE",
        ),
    ),
    list_parts=extend_schema(
        tags=["uploads"],
        summary="The parts the store holds for an active upload",
        parameters=[UPLOAD_ID],
        responses=responses(
            {200: data_of(obj(["parts"], {"parts": {"type": "array", "items": ref("HeldPart")}}))},
            *NOT_FOUND,
            "UPLOAD_NOT_ACTIVE",
            "STORAGE_UNAVAILABLE",
        ),
    ),
    complete=extend_schema(
        tags=["uploads"],
        summary="Assemble the parts, verify the object and mark the file uploaded",
        parameters=[UPLOAD_ID],
        request=body(
            ["parts"],
            {
                "parts": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_PARTS,
                    "description": "Every part, 1 to partCount, once each.",
                    "items": obj(
                        ["partNumber", "etag"],
                        {
                            "partNumber": PART_NUMBER,
                            "etag": {"type": "string", "minLength": 1, "maxLength": 1024},
                        },
                        additionalProperties=False,
                    ),
                }
            },
        ),
        responses=responses(
            {200: ref("File")},
            *NOT_FOUND,
            "VALIDATION_ERROR",
            "UPLOAD_NOT_ACTIVE",
            "FILE_NOT_PENDING",
            "UPLOAD_PARTS_INCOMPLETE",
            "UPLOAD_SIZE_MISMATCH",
            "CONTENT_TYPE_MISMATCH",
            "STORAGE_UNAVAILABLE",
        ),
    ),
    destroy=extend_schema(
        tags=["uploads"],
        summary="Abort an upload (the store drops its parts); aborting twice is a success",
        parameters=[UPLOAD_ID],
        responses=responses(
            {
                200: data_of(
                    obj(
                        ["id", "aborted"],
                        {
                            "id": public_id("upload"),
                            "aborted": {"type": "boolean", "enum": [True]},
                        },
                    )
                )
            },
            *NOT_FOUND,
            "UPLOAD_NOT_ACTIVE",
            "STORAGE_UNAVAILABLE",
        ),
    ),
)
