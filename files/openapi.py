"""The OpenAPI description of Files, Folders and identity (see storage_service/openapi.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema

from accounts.views import MeView
from files import selectors
from files.views import FileViewSet, FolderViewSet
from storage_service.openapi import (
    CONTENT_TYPE,
    EMPTY_BODY,
    FILE_ID,
    FILENAME,
    METADATA,
    PATH,
    body,
    data_of,
    describe,
    obj,
    page_of,
    ref,
    responses,
)

# The single-PUT limit is a setting (5 GiB by default); above it the answer is 413.
SIZE = {"type": "integer", "minimum": 0, "description": "Bytes; at most 5 GiB by default."}
LIMIT = OpenApiParameter("limit", int, description="1 to 100.", default=20)
CURSOR = OpenApiParameter("cursor", str, description="The previous page's `nextCursor`, unchanged.")
NOT_FOUND = ("FILE_NOT_FOUND", "VALIDATION_ERROR")

describe(
    MeView,
    get=extend_schema(
        tags=["identity"],
        summary="The project, organization and key this request authenticates as",
        responses=responses({200: data_of(ref("Me"))}),
    ),
)

describe(
    FileViewSet,
    upload=extend_schema(
        tags=["files"],
        summary="Start a single-PUT upload",
        description=(
            "Creates a pending file and answers a presigned PUT. PUT the bytes to `upload.url` "
            "with `upload.headers`, then call complete. An `Idempotency-Key` header makes "
            "retries safe (replays answer `Idempotent-Replayed: true`)."
        ),
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                description="1-255 printable ASCII.",
            )
        ],
        request=body(
            ["filename", "contentType", "size"],
            {
                "filename": FILENAME,
                "contentType": CONTENT_TYPE,
                "size": SIZE,
                "path": PATH,
                "metadata": METADATA,
            },
        ),
        responses=responses(
            {201: ref("FileWithUpload")},
            "VALIDATION_ERROR",
            "FILE_TOO_LARGE",
            "IDEMPOTENCY_KEY_REUSED",
            "STORAGE_UNAVAILABLE",
        ),
    ),
    complete=extend_schema(
        tags=["files"],
        summary="Verify the uploaded bytes and mark the file uploaded",
        parameters=[FILE_ID],
        request=EMPTY_BODY,
        responses=responses(
            {
                200: data_of(
                    obj(
                        ["id", "status", "uploadedAt", "checksum", "version"],
                        {
                            "id": {"type": "string"},
                            "status": {"type": "string", "enum": ["uploaded"]},
                            "uploadedAt": {"type": "string", "format": "date-time"},
                            "checksum": {"type": "string"},
                            "version": {"type": "integer"},
                        },
                    )
                )
            },
            *NOT_FOUND,
            "FILE_NOT_PENDING",
            "UPLOAD_IS_MULTIPART",
            "OBJECT_NOT_FOUND",
            "UPLOAD_SIZE_MISMATCH",
            "CONTENT_TYPE_MISMATCH",
            "STORAGE_UNAVAILABLE",
        ),
    ),
    list=extend_schema(
        tags=["files"],
        summary="List files (keyset pages)",
        parameters=[
            LIMIT,
            CURSOR,
            OpenApiParameter("search", str, description="Substring of the filename."),
            OpenApiParameter("path", str, description="Exact folder path; '/' is the root."),
            OpenApiParameter("status", str, enum=["pending", "uploaded", "failed", "deleted"]),
            OpenApiParameter("contentType", str),
            OpenApiParameter("sortBy", str, enum=list(selectors.SORT_FIELDS), default="createdAt"),
            OpenApiParameter("order", str, enum=["asc", "desc"], default="desc"),
        ],
        responses=responses({200: page_of(ref("File"))}, "VALIDATION_ERROR"),
    ),
    retrieve=extend_schema(
        tags=["files"],
        summary="Get a file",
        parameters=[FILE_ID],
        responses=responses({200: data_of(ref("File"))}, *NOT_FOUND),
    ),
    partial_update=extend_schema(
        tags=["files"],
        summary="Rename, move, or replace the metadata",
        parameters=[FILE_ID],
        request=body(
            [], {"filename": FILENAME, "path": PATH, "metadata": METADATA}, minProperties=1
        ),
        responses=responses({200: ref("File")}, *NOT_FOUND),
    ),
    copy=extend_schema(
        tags=["files"],
        summary="Copy a file (shares the stored bytes)",
        parameters=[FILE_ID],
        request=body([], {"filename": FILENAME, "path": PATH}),
        responses=responses({201: ref("File")}, *NOT_FOUND, "FILE_NOT_UPLOADED"),
    ),
    download_url=extend_schema(
        tags=["files"],
        summary="A presigned GET URL for the current version",
        parameters=[FILE_ID],
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
        responses=responses({200: ref("DownloadUrl")}, *NOT_FOUND, "FILE_NOT_UPLOADED"),
    ),
    replace=extend_schema(
        tags=["files"],
        summary="Start replacing the content (same id, next version)",
        parameters=[FILE_ID],
        request=body(["contentType", "size"], {"contentType": CONTENT_TYPE, "size": SIZE}),
        responses=responses(
            {200: ref("FileWithUpload")},
            *NOT_FOUND,
            "FILE_NOT_UPLOADED",
            "REPLACE_IN_PROGRESS",
            "FILE_TOO_LARGE",
            "STORAGE_UNAVAILABLE",
        ),
    ),
    replace_complete=extend_schema(
        tags=["files"],
        summary="Verify the replacement's bytes and make them the current version",
        parameters=[FILE_ID],
        request=EMPTY_BODY,
        responses=responses(
            {200: ref("File")},
            *NOT_FOUND,
            "NO_REPLACE_IN_PROGRESS",
            "OBJECT_NOT_FOUND",
            "UPLOAD_SIZE_MISMATCH",
            "CONTENT_TYPE_MISMATCH",
            "STORAGE_UNAVAILABLE",
        ),
    ),
    destroy=extend_schema(
        tags=["files"],
        summary="Delete (soft; restorable during the grace window)",
        parameters=[FILE_ID],
        responses=responses(
            {
                200: data_of(
                    obj(
                        ["id", "deleted"],
                        {"id": {"type": "string"}, "deleted": {"type": "boolean", "enum": [True]}},
                    )
                )
            },
            *NOT_FOUND,
        ),
    ),
    restore=extend_schema(
        tags=["files"],
        summary="Restore a deleted file",
        parameters=[FILE_ID],
        request=EMPTY_BODY,
        responses=responses({200: ref("File")}, *NOT_FOUND, "FILE_NOT_DELETED", "OBJECT_NOT_FOUND"),
    ),
)

describe(
    FolderViewSet,
    list=extend_schema(
        tags=["folders"],
        summary="Direct child folders of a path",
        parameters=[
            OpenApiParameter("parent", str, description="A folder path; root when omitted."),
            OpenApiParameter("limit", int, description="1 to 100.", default=100),
            CURSOR,
        ],
        responses=responses({200: page_of(ref("Folder"))}, "VALIDATION_ERROR"),
    ),
)
