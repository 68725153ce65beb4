"""HTTP only: the contract's "Multipart uploads" section. Routes are in storage_service/urls.py."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import tenant_of, upload_grant_of
from accounts.scopes import scope
from files.openapi import START_ERRORS, VERIFY_ERRORS, file_links
from files.serializers import file_json
from files.shapes import FileJson
from storage_service.idempotency import (
    IDEMPOTENCY_KEY,
    IDEMPOTENT_REPLAYED,
    idempotency_of,
    replayable,
)
from storage_service.openapi import Links, each, errors_of, path_id
from storage_service.operations import ResourceSchema
from storage_service.policies import SharedPolicies
from storage_service.serializers import validated
from storage_service.shapes import Data
from uploads import services
from uploads.serializers import (
    CompleteRequest,
    MultipartStartRequest,
    SignPartsRequest,
    held_parts_json,
    parts_json,
    started_json,
)
from uploads.shapes import HeldPartsJson, MultipartStartedJson, SignedPartsJson, UploadAbortedJson
from uploads.tokens import session_owned

UPLOAD_ID = path_id("upload_id", "upload")
SESSION_OPERATIONS = (
    "uploads_sign_parts",
    "uploads_list_parts",
    "uploads_complete",
    "uploads_destroy",
)
SESSIONS = ResourceSchema(
    tag="uploads",
    read=scope("files:read", upload_token=True),
    write=scope("files:write", upload_token=True),
    id_parameter=UPLOAD_ID,
    not_found="UPLOAD_NOT_FOUND",
)


class MultipartUploadViewSet(SharedPolicies, viewsets.ViewSet):
    @extend_schema(
        extensions=scope("files:write", upload_token=True),
        tags=["uploads"],
        summary="Start a multipart upload",
        description="Creates a pending file and an upload session with a presigned PUT for "
        "every part. PUT each part's bytes, keep each response's ETag, then call complete. "
        "A session not completed within 24 hours is aborted.",
        parameters=[IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED],
        request=MultipartStartRequest,
        responses={
            201: Links(
                Data[MultipartStartedJson],
                {
                    **each(SESSION_OPERATIONS, upload_id="$response.body#/data/upload/id"),
                    **file_links("$response.body#/data/file/id"),
                },
            ),
            **errors_of(*START_ERRORS),
        },
    )
    def create(self, request: Request) -> Response:
        body = validated(MultipartStartRequest, request.data)
        key, request_hash = idempotency_of(request)
        started = services.upload_start(
            tenant=tenant_of(request),
            filename=body["filename"],
            content_type=body["contentType"],
            size=body["size"],
            path=body.get("path"),
            metadata=body.get("metadata"),
            expires_at=body.get("expires_at"),
            idempotency_key=key,
            request_hash=request_hash,
            grant=upload_grant_of(request),
        )
        answer: Data[MultipartStartedJson] = {"data": started_json(started)}
        return replayable(answer, replayed=started.replayed, status=201)

    @SESSIONS.on_one(
        SESSIONS.write,
        summary="Fresh presigned PUT URLs for some parts of an active upload",
        request=SignPartsRequest,
        answer=Data[SignedPartsJson],
        errors=("UPLOAD_NOT_ACTIVE",),
    )
    def sign_parts(self, request: Request, upload_id: str) -> Response:
        body = validated(SignPartsRequest, request.data)
        session_owned(upload_grant_of(request), upload_id)
        parts = services.upload_sign_parts(
            tenant=tenant_of(request), upload_id=upload_id, part_numbers=body["partNumbers"]
        )
        answer: Data[SignedPartsJson] = {"data": {"id": upload_id, "parts": parts_json(parts)}}
        return Response(answer)

    @SESSIONS.on_one(
        SESSIONS.read,
        summary="The parts the store holds for an active upload, in part order",
        answer=Data[HeldPartsJson],
        errors=("UPLOAD_NOT_ACTIVE", "STORAGE_UNAVAILABLE"),
    )
    def list_parts(self, request: Request, upload_id: str) -> Response:
        session_owned(upload_grant_of(request), upload_id)
        held = services.upload_parts_held(tenant=tenant_of(request), upload_id=upload_id)
        answer: Data[HeldPartsJson] = {"data": held_parts_json(held)}
        return Response(answer)

    @SESSIONS.on_one(
        SESSIONS.write,
        summary="Assemble the parts, verify the object and mark the file uploaded",
        description="Checks, in this order, and changes nothing when it refuses: the body; "
        "the list is exactly parts 1..partCount (409 `UPLOAD_PARTS_INCOMPLETE`); the store "
        "holds each with that etag; each has its exact length (409 `UPLOAD_SIZE_MISMATCH`). "
        "Bytes that contradict the declared type abort the session (409 "
        "`CONTENT_TYPE_MISMATCH`).",
        request=CompleteRequest,
        answer=Links(FileJson, file_links("$response.body#/id")),
        errors=("UPLOAD_NOT_ACTIVE", "FILE_NOT_PENDING", "UPLOAD_PARTS_INCOMPLETE", *VERIFY_ERRORS),
    )
    def complete(self, request: Request, upload_id: str) -> Response:
        body = validated(CompleteRequest, request.data)
        session_owned(upload_grant_of(request), upload_id)
        file = services.upload_complete(
            tenant=tenant_of(request), upload_id=upload_id, parts=body["parts"]
        )
        answer: FileJson = file_json(file)
        return Response(answer)

    @SESSIONS.on_one(
        SESSIONS.write,
        summary="Abort an upload (the store drops its parts); aborting twice is a success",
        description="The file becomes `failed`. A completed session cannot be aborted (409 "
        "`UPLOAD_NOT_ACTIVE`; delete the file instead).",
        answer=Data[UploadAbortedJson],
        errors=("UPLOAD_NOT_ACTIVE", "STORAGE_UNAVAILABLE"),
    )
    def destroy(self, request: Request, upload_id: str) -> Response:
        session_owned(upload_grant_of(request), upload_id)
        session = services.upload_abort(tenant=tenant_of(request), upload_id=upload_id)
        answer: Data[UploadAbortedJson] = {"data": {"id": session.id, "aborted": True}}
        return Response(answer)
