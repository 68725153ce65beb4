"""HTTP only: the contract's "Multipart uploads" section. Routes are in storage_service/urls.py."""

from __future__ import annotations

from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import project_of
from files.serializers import file_json
from storage_service.idempotency import idempotency_key, request_fingerprint
from storage_service.serializers import validated
from uploads import services
from uploads.serializers import (
    CompleteRequest,
    MultipartStartRequest,
    SignPartsRequest,
    parts_json,
    session_json,
)


class MultipartUploadViewSet(viewsets.ViewSet):
    def create(self, request: Request) -> Response:
        body = validated(MultipartStartRequest, request.data)
        started = services.upload_start(
            project=project_of(request),
            filename=body["filename"],
            content_type=body["contentType"],
            size=body["size"],
            path=body.get("path"),
            metadata=body.get("metadata"),
            idempotency_key=idempotency_key(request),
            request_hash=request_fingerprint(request.data),
        )
        response = Response(
            {
                "data": {
                    "file": file_json(started.file),
                    "upload": session_json(started.session, started.parts),
                }
            },
            status=201,
        )
        if started.replayed:
            response["Idempotent-Replayed"] = "true"
        return response

    def sign_parts(self, request: Request, upload_id: str) -> Response:
        body = validated(SignPartsRequest, request.data)
        parts = services.upload_sign_parts(
            project=project_of(request), upload_id=upload_id, part_numbers=body["partNumbers"]
        )
        return Response({"data": {"id": upload_id, "parts": parts_json(parts)}})

    def list_parts(self, request: Request, upload_id: str) -> Response:
        held = services.upload_parts_held(project=project_of(request), upload_id=upload_id)
        return Response(
            {
                "data": {
                    "parts": [
                        {"partNumber": part.number, "etag": part.etag, "size": part.size}
                        for part in held
                    ]
                }
            }
        )

    def complete(self, request: Request, upload_id: str) -> Response:
        body = validated(CompleteRequest, request.data)
        file = services.upload_complete(
            project=project_of(request), upload_id=upload_id, parts=body["parts"]
        )
        return Response(file_json(file))

    def destroy(self, request: Request, upload_id: str) -> Response:
        session = services.upload_abort(project=project_of(request), upload_id=upload_id)
        return Response({"data": {"id": session.id, "aborted": True}})
