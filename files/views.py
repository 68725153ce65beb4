"""HTTP only: parse, call a service or selector, render. The table of endpoints is urls.py."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import project_of
from files import selectors, services
from files.serializers import (
    CopyRequest,
    DownloadUrlRequest,
    EmptyRequest,
    ReplaceRequest,
    UpdateRequest,
    UploadRequest,
    file_json,
)
from files.validation import clean_path
from storage_service import objectstore
from storage_service.idempotency import idempotency_key, request_fingerprint
from storage_service.serializers import validated, validated_query
from storage_service.timefmt import iso


def upload_json(upload: objectstore.PresignedUpload) -> dict[str, Any]:
    return {
        "url": upload.url,
        "method": upload.method,
        "headers": upload.headers,
        "expiresAt": iso(upload.expires_at),
    }


class FileListQuery(serializers.Serializer):
    """Paging and sorting; the filters are FileFilter's (files/filters.py)."""

    limit = serializers.IntegerField(min_value=1, max_value=100, default=20)
    cursor = serializers.CharField(required=False, max_length=2000)
    sortBy = serializers.ChoiceField(choices=list(selectors.SORT_FIELDS), default="createdAt")
    order = serializers.ChoiceField(choices=["asc", "desc"], default="desc")


FILTER_PARAMS = ("search", "path", "status", "contentType")


class FileViewSet(viewsets.ViewSet):
    """The contract's "Files" section."""

    def upload(self, request: Request) -> Response:
        body = validated(UploadRequest, request.data)
        key = idempotency_key(request)
        started = services.file_upload_start(
            project=project_of(request),
            filename=body["filename"],
            content_type=body["contentType"],
            size=body["size"],
            path=body.get("path"),
            metadata=body.get("metadata"),
            idempotency_key=key,
            request_hash=request_fingerprint(request.data),
        )
        response = Response(
            {"file": file_json(started.file), "upload": upload_json(started.upload)}, status=201
        )
        if started.replayed:
            response["Idempotent-Replayed"] = "true"
        return response

    def complete(self, request: Request, file_id: str) -> Response:
        validated(EmptyRequest, request.data)
        file = services.file_complete(project=project_of(request), file_id=file_id)
        return Response(
            {
                "data": {
                    "id": file.id,
                    "status": file.status,
                    "uploadedAt": iso(file.uploaded_at),
                    "checksum": file.checksum,
                    "version": file.version,
                }
            }
        )

    def list(self, request: Request) -> Response:
        query = validated_query(FileListQuery, request)
        params = request.query_params
        page = selectors.file_list(
            project=project_of(request),
            filters={name: params[name] for name in FILTER_PARAMS if name in params},
            options=selectors.FileListOptions(
                limit=query["limit"],
                cursor=query.get("cursor"),
                sort_by=query["sortBy"],
                order=query["order"],
            ),
        )
        return Response(
            {"data": [file_json(f) for f in page.items], "pagination": page.pagination_json()}
        )

    def retrieve(self, request: Request, file_id: str) -> Response:
        file = selectors.file_get(project=project_of(request), file_id=file_id)
        return Response({"data": file_json(file)})

    def partial_update(self, request: Request, file_id: str) -> Response:
        changes = validated(UpdateRequest, request.data)
        file = services.file_update(project=project_of(request), file_id=file_id, changes=changes)
        return Response(file_json(file))

    def copy(self, request: Request, file_id: str) -> Response:
        body = validated(CopyRequest, request.data)
        file = services.file_copy(
            project=project_of(request),
            file_id=file_id,
            filename=body.get("filename"),
            path=body.get("path", ...),
        )
        return Response(file_json(file), status=201)

    def download_url(self, request: Request, file_id: str) -> Response:
        body = validated(DownloadUrlRequest, request.data)
        download = services.file_download_url(
            project=project_of(request),
            file_id=file_id,
            expires_in=body.get("expiresInSeconds", 3600),
        )
        return Response({"url": download.url, "expiresAt": iso(download.expires_at)})

    def replace(self, request: Request, file_id: str) -> Response:
        body = validated(ReplaceRequest, request.data)
        started = services.file_replace_start(
            project=project_of(request),
            file_id=file_id,
            content_type=body["contentType"],
            size=body["size"],
        )
        return Response({"file": file_json(started.file), "upload": upload_json(started.upload)})

    def replace_complete(self, request: Request, file_id: str) -> Response:
        validated(EmptyRequest, request.data)
        file = services.file_replace_complete(project=project_of(request), file_id=file_id)
        return Response(file_json(file))

    def destroy(self, request: Request, file_id: str) -> Response:
        file = services.file_delete(project=project_of(request), file_id=file_id)
        return Response({"data": {"id": file.id, "deleted": True}})

    def restore(self, request: Request, file_id: str) -> Response:
        validated(EmptyRequest, request.data)
        file = services.file_restore(project=project_of(request), file_id=file_id)
        return Response(file_json(file))


class FolderListQuery(serializers.Serializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        # Declared here because "parent" is an attribute every serializer already has.
        return {
            "parent": serializers.CharField(required=False, allow_blank=True, max_length=4096),
            "limit": serializers.IntegerField(min_value=1, max_value=100, default=100),
            "cursor": serializers.CharField(required=False, max_length=2000),
        }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "parent" in attrs:
            try:
                attrs["parent"] = clean_path(attrs["parent"])
            except serializers.ValidationError as exc:
                raise serializers.ValidationError({"parent": exc.detail}) from exc
        return attrs


class FolderViewSet(viewsets.ViewSet):
    def list(self, request: Request) -> Response:
        query = validated_query(FolderListQuery, request)
        page = selectors.folder_list(
            project=project_of(request),
            parent=query.get("parent"),
            limit=query["limit"],
            cursor=query.get("cursor"),
        )
        return Response(
            {
                "data": [folder.as_json() for folder in page.items],
                "pagination": page.pagination_json(),
            }
        )
