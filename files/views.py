"""HTTP only: parse, call a service or selector, render. The table of endpoints is urls.py.

Each method's ``@extend_schema`` is its entry in the OpenAPI document: its body (the request
serializer it validates with), its answers (the shapes its renderers return) and its own
error codes; storage_service/openapi/ adds what every operation shares.
"""

from __future__ import annotations

from typing import Any, cast

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.auth import bearer_token
from accounts.context import api_key_of, tenant_of, upload_grant_of
from accounts.scopes import scope
from accounts.tenancy import Tenant
from accounts.throttling import refusal_wait
from files import selectors, services
from files.filters import FileFilterSet, FolderFilterSet, file_ordering
from files.models import File, FileQuerySet
from files.openapi import FILES, START_ERRORS, VERIFY_ERRORS, file_links
from files.serializers import (
    BatchRequest,
    CopyRequest,
    DownloadUrlRequest,
    ReplaceRequest,
    UpdateRequest,
    UploadRequest,
    batch_result_json,
    completed_json,
    deleted_json,
    download_url_json,
    file_answer,
    file_json,
    file_with_upload_json,
    folder_json,
    upload_arguments,
)
from files.services import Operation, Outcome
from files.shapes import (
    BatchResultJson,
    DownloadUrlJson,
    FileCompletedJson,
    FileDeletedJson,
    FileJson,
    FileWithUploadJson,
    FolderJson,
)
from files.validation import clean_path
from storage_service.errors import FileNotFound, RateLimited, exception_handler
from storage_service.idempotency import (
    IDEMPOTENCY_KEY,
    IDEMPOTENT_REPLAYED,
    idempotency_of,
    replayable,
)
from storage_service.openapi import Links, Shape, errors_of
from storage_service.pagination import CursorPagination
from storage_service.policies import SharedPolicies
from storage_service.serializers import EmptyRequest, validated
from storage_service.shapes import Data


class FileViewSet(SharedPolicies, viewsets.GenericViewSet):
    """The contract's "Files" section."""

    pagination_class = CursorPagination
    filterset_class = FileFilterSet
    # GET's file, read with its key by perform_authentication (None: not found).
    shown: selectors.FileText | None = None

    def get_queryset(self) -> FileQuerySet:
        return File.objects.for_tenant(tenant_of(self.request))

    def perform_authentication(self, request: Request) -> None:
        """GET of one file reads the API key and the file in one statement: DRF would read
        the key here and the view the file, two round trips for the route's one row. Any
        other credential, or none, or a key that is unknown or revoked, is authenticated as
        on every route (a 401, or an upload token's 403 from HasScope)."""
        token = bearer_token(request) if self.action == "retrieve" else None
        found = None
        if token is not None:
            found = selectors.file_shown_with_key(raw_key=token, file_id=self.kwargs["file_id"])
        if found is None:
            super().perform_authentication(request)
            return
        api_key, self.shown = found
        # DRF's setters: as if ApiKeyAuthentication had returned (api_key, api_key); the
        # API has no human users, so request.user is the key itself.
        request.user = cast(Any, api_key)
        request.auth = api_key

    def sort(self) -> tuple[str, str]:
        """The list's ``sortBy`` and ``order``, defaults applied (the filter set has
        validated both before the page is read)."""
        params = self.request.query_params
        sorts = FileFilterSet.base_filters
        sort_by = params.get("sortBy") or sorts["sortBy"].default
        return sort_by, params.get("order") or sorts["order"].default

    @property
    def ordering(self) -> tuple[str, str]:
        """The page's keyset: ``(sort, id)`` in the list's order."""
        return file_ordering(*self.sort())

    @property
    def cursor_scope(self) -> str:
        """A cursor belongs to its sort and order."""
        sort_by, order = self.sort()
        return f"files:{sort_by}:{order}"

    def page_rows(self, queryset: FileQuerySet, count: int) -> list[selectors.FileText]:
        """A page's rows, the fields file_json shows: a search has its own bounded plan
        (selectors.file_search_page)."""
        term = self.request.query_params.get("search")
        if term:
            return selectors.file_search_page(queryset, term, count, ordering=self.ordering)
        return selectors.file_page(queryset, count)

    @extend_schema(
        extensions=scope("files:write", upload_token=True),
        tags=["files"],
        summary="Start a single-PUT upload",
        description="Creates a pending file and answers a presigned PUT. PUT the bytes to "
        "`upload.url` with `upload.headers`, then call complete.",
        parameters=[IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED],
        request=UploadRequest,
        responses={
            201: Links(FileWithUploadJson, file_links("$response.body#/file/id")),
            **errors_of(*START_ERRORS),
        },
    )
    def upload(self, request: Request) -> Response:
        body = validated(UploadRequest, request.data)
        key, request_hash = idempotency_of(request)
        started = services.file_upload_start(
            tenant=tenant_of(request),
            **upload_arguments(body),
            idempotency_key=key,
            request_hash=request_hash,
            grant=upload_grant_of(request),
        )
        answer: FileWithUploadJson = file_with_upload_json(started.file, started.upload)
        return replayable(answer, replayed=started.replayed, status=201)

    @FILES.on_one(
        scope("files:write", upload_token=True),
        summary="Verify the uploaded bytes and mark the file uploaded",
        description="Reads the stored object's real size and sniffs its type. With no bytes "
        "yet: 409 `OBJECT_NOT_FOUND`, nothing changes (PUT, then complete again). A size or "
        "type that contradicts the declared one marks the file `failed`.",
        request=EmptyRequest,
        answer=Data[FileCompletedJson],
        errors=("FILE_NOT_PENDING", "UPLOAD_IS_MULTIPART", "OBJECT_NOT_FOUND", *VERIFY_ERRORS),
    )
    def complete(self, request: Request, file_id: str) -> Response:
        validated(EmptyRequest, request.data)
        file = services.file_complete(
            tenant=tenant_of(request), file_id=file_id, grant=upload_grant_of(request)
        )
        answer: Data[FileCompletedJson] = {"data": completed_json(file)}
        return Response(answer)

    @extend_schema(
        extensions=scope("files:read"),
        tags=["files"],
        summary="List files (keyset pages)",
        description="Newest first by default. Pages are keyset pages ordered by "
        "`(sortBy, id)`: a cursor belongs to its `sortBy` and `order` (another answers 400). "
        "A parameter given twice answers 400.",
        responses={200: Shape(FileJson)},
    )
    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None  # pagination_class is set
        return self.get_paginated_response([file_json(file) for file in page])

    @FILES.on_one(FILES.read, summary="Get a file", answer=Data[FileJson])
    def retrieve(self, request: Request, file_id: str) -> Response:
        # Read with the key (perform_authentication): deleted, foreign and unknown are 404.
        if self.shown is None:
            raise FileNotFound("No such file.")
        answer: Data[FileJson] = {"data": file_json(self.shown)}
        return Response(answer)

    @FILES.on_one(
        FILES.write,
        summary="Rename, move, or replace the metadata",
        request=UpdateRequest,
        answer=FileJson,
    )
    def partial_update(self, request: Request, file_id: str) -> Response:
        changes = validated(UpdateRequest, request.data)
        file = services.file_update(tenant=tenant_of(request), file_id=file_id, changes=changes)
        answer: FileJson = file_json(file)
        return Response(answer)

    @FILES.on_one(
        FILES.write,
        summary="Copy a file (shares the stored bytes)",
        request=CopyRequest,
        answer=Links(FileJson, file_links("$response.body#/id")),
        status=201,
        errors=("FILE_NOT_UPLOADED",),
    )
    def copy(self, request: Request, file_id: str) -> Response:
        body = validated(CopyRequest, request.data)
        file = services.file_copy(
            tenant=tenant_of(request),
            file_id=file_id,
            filename=body.get("filename"),
            path=body.get("path", ...),
        )
        answer: FileJson = file_json(file)
        return Response(answer, status=201)

    @FILES.on_one(
        FILES.read,
        summary="A presigned GET URL for the current version",
        description="The URL answers the bytes with the file's content type and "
        "`Content-Disposition: attachment` with its name. Counts as bandwidth.",
        request=DownloadUrlRequest,
        answer=DownloadUrlJson,
        errors=("FILE_NOT_UPLOADED",),
    )
    def download_url(self, request: Request, file_id: str) -> Response:
        body = validated(DownloadUrlRequest, request.data)
        download = services.file_download_url(
            tenant=tenant_of(request), file_id=file_id, expires_in=body["expiresInSeconds"]
        )
        answer: DownloadUrlJson = download_url_json(download)
        return Response(answer)

    @FILES.on_one(
        FILES.write,
        summary="Start replacing the content (same id, next version)",
        description="While the replacement is pending the file stays `uploaded` and serves "
        "its current version. A second replace while one is pending answers 409 "
        "`REPLACE_IN_PROGRESS`, unless the pending one's upload URL has expired.",
        request=ReplaceRequest,
        answer=FileWithUploadJson,
        errors=(
            "FILE_NOT_UPLOADED",
            "REPLACE_IN_PROGRESS",
            "FILE_TOO_LARGE",
            "QUOTA_EXCEEDED",
            "CONTENT_TYPE_NOT_ALLOWED",
            "STORAGE_UNAVAILABLE",
        ),
    )
    def replace(self, request: Request, file_id: str) -> Response:
        body = validated(ReplaceRequest, request.data)
        started = services.file_replace_start(
            tenant=tenant_of(request),
            file_id=file_id,
            content_type=body["contentType"],
            size=body["size"],
        )
        answer: FileWithUploadJson = file_with_upload_json(started.file, started.upload)
        return Response(answer)

    @FILES.on_one(
        FILES.write,
        summary="Verify the replacement's bytes and make them the current version",
        description="A refusal cancels the replacement (the file is unchanged).",
        request=EmptyRequest,
        answer=FileJson,
        errors=("NO_REPLACE_IN_PROGRESS", "OBJECT_NOT_FOUND", *VERIFY_ERRORS),
    )
    def replace_complete(self, request: Request, file_id: str) -> Response:
        validated(EmptyRequest, request.data)
        file = services.file_replace_complete(tenant=tenant_of(request), file_id=file_id)
        answer: FileJson = file_json(file)
        return Response(answer)

    @FILES.on_one(
        FILES.write,
        summary="Delete (soft; restorable during the grace window)",
        description="A deleted file reads as 404 everywhere but restore and the trash "
        "(`GET /v1/files?status=deleted`). Deleting drops a pending replacement.",
        answer=Links(
            Data[FileDeletedJson], {"files_restore": {"file_id": "$request.path.file_id"}}
        ),
    )
    def destroy(self, request: Request, file_id: str) -> Response:
        file = services.file_delete(tenant=tenant_of(request), file_id=file_id)
        answer: Data[FileDeletedJson] = {"data": deleted_json(file)}
        return Response(answer)

    @FILES.on_one(
        FILES.write,
        summary="Restore a deleted file",
        description="Brings the file back with the status it had, until the purge sweep has "
        "run (then 409 `OBJECT_NOT_FOUND`).",
        request=EmptyRequest,
        answer=FileJson,
        errors=("FILE_NOT_DELETED", "OBJECT_NOT_FOUND"),
    )
    def restore(self, request: Request, file_id: str) -> Response:
        validated(EmptyRequest, request.data)
        file = services.file_restore(tenant=tenant_of(request), file_id=file_id)
        answer: FileJson = file_json(file)
        return Response(answer)


class FileBatchViewSet(SharedPolicies, viewsets.ViewSet):
    @extend_schema(
        extensions=scope("files:write"),
        tags=["files"],
        summary="Up to 100 file operations in one request",
        description="Each operation runs on its own, exactly as its single endpoint "
        "(`PATCH`, `DELETE`, `…/restore`, `…/copy`), with the same checks and events; one "
        "refused does not stop the others. The answer lists, in request order, each "
        "operation's status and body as that endpoint answers them. The request is checked "
        "whole first: a malformed operation (unknown `op` or field, missing `id`, an id "
        "given twice, a field its endpoint would refuse) is one 400 and nothing runs. Each "
        "operation counts against the key's write budget (429 for the whole batch, nothing "
        "run, when the budget cannot cover it).",
        parameters=[IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED],
        request=BatchRequest,
        responses={200: Shape(Data[list[BatchResultJson]]), **errors_of("IDEMPOTENCY_KEY_REUSED")},
    )
    def batch(self, request: Request) -> Response:
        body = validated(BatchRequest, request.data)
        key, request_hash = idempotency_of(request)
        operations = body["operations"]
        _count_operations(request, len(operations))
        tenant = tenant_of(request)
        answer = services.files_batch(
            tenant=tenant,
            operations=[_operation(tenant, operation) for operation in operations],
            render=lambda outcomes: {"data": [_result(outcome, request) for outcome in outcomes]},
            idempotency_key=key,
            request_hash=request_hash,
        )
        return replayable(answer.body, replayed=answer.replayed)


def _count_operations(request: Request, count: int) -> None:
    """The request itself was counted by the throttle; each further operation is counted
    here, before any runs. The budget's first refusal refuses the whole batch."""
    api_key = api_key_of(request)
    for _ in range(count - 1):
        wait = refusal_wait(api_key, request.method or "POST")
        if wait is not None:
            raise RateLimited(
                f"The key's write budget cannot cover {count} operations this minute.",
                retry_after=int(wait + 0.999),
            )


def _operation(tenant: Tenant, operation: dict[str, Any]) -> Operation:
    """The service call of the operation's single endpoint, with its validated fields."""
    op, file_id, fields = operation["op"], operation["id"], operation["fields"]
    if op == "update":
        return Operation(
            op,
            file_id,
            lambda: services.file_update(tenant=tenant, file_id=file_id, changes=fields),
        )
    if op == "delete":
        return Operation(op, file_id, lambda: services.file_delete(tenant=tenant, file_id=file_id))
    if op == "restore":
        return Operation(op, file_id, lambda: services.file_restore(tenant=tenant, file_id=file_id))
    return Operation(
        op,
        file_id,
        lambda: services.file_copy(
            tenant=tenant,
            file_id=file_id,
            filename=fields.get("filename"),
            path=fields.get("path", ...),
        ),
    )


def _result(outcome: Outcome, request: Request) -> BatchResultJson:
    if outcome.error is None:
        return batch_result_json(outcome, file_answer(outcome))
    # The refusal rendered by the one exception handler, exactly as the endpoint would.
    rendered = exception_handler(outcome.error, {"request": request, "view": None})
    assert rendered is not None
    return batch_result_json(outcome, (rendered.status_code, rendered.data))


class FolderViewSet(SharedPolicies, viewsets.GenericViewSet):
    pagination_class = CursorPagination
    filterset_class = FolderFilterSet
    ordering = ("name",)  # a folder's name is unique among its parent's children
    page_size = 100

    def get_queryset(self) -> FileQuerySet:
        return File.objects.for_tenant(tenant_of(self.request))

    @property
    def parent(self) -> str | None:
        """The folder listed (None: the root); the filter set has validated it."""
        return clean_path(self.request.query_params.get("parent"))

    @property
    def cursor_scope(self) -> str:
        """A cursor belongs to the folder it lists."""
        return f"folders:{self.parent or ''}"

    @extend_schema(
        extensions=scope("files:read"),
        tags=["folders"],
        summary="Direct child folders of a path, by name",
        description="A folder exists while a file that is not deleted is in it or below it; "
        "`fileCount` counts those files.",
        responses={200: Shape(FolderJson)},
    )
    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None  # pagination_class is set
        rows = cast(list[selectors.FolderRow], page)  # the filter set's .values() rows
        parent = self.parent
        return self.get_paginated_response([folder_json(row, parent=parent) for row in rows])
