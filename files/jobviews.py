"""HTTP only, for work on many files: folder operations (jobs) and batches of file
operations. The table of endpoints is urls.py; each method's ``@extend_schema`` is its entry
in the OpenAPI document (see files/views.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import api_key_of, tenant_of
from accounts.scopes import scope
from accounts.tenancy import Tenant
from accounts.throttling import refusal_wait
from files import services
from files.jobserializers import (
    BatchRequest,
    FolderMoveRequest,
    FolderRequest,
    batch_result_json,
    file_answer,
)
from files.services import Operation, Outcome
from files.shapes import BatchResultJson
from jobs.serializers import job_json
from jobs.shapes import JobJson
from storage_service.errors import RateLimited, exception_handler
from storage_service.idempotency import (
    IDEMPOTENCY_KEY,
    IDEMPOTENT_REPLAYED,
    idempotency_key,
    request_fingerprint,
)
from storage_service.openapi import Links, errors_of
from storage_service.serializers import validated
from storage_service.shapes import Data

JOB_LINKS = {"jobs_retrieve": {"job_id": "$response.body#/data/id"}}
# Every folder operation answers its job at once; the work is the workers'.
JOB_STARTED = {202: Links(Data[JobJson], JOB_LINKS)}
JOB_REFUSALS = ("FOLDER_NOT_FOUND", "RATE_LIMITED")


class FolderOperationViewSet(viewsets.ViewSet):
    # Every route here is a POST: without this, the action named "delete" would also be
    # taken for the HTTP method's handler (DRF advertises DELETE in Allow and answers it).
    http_method_names = ["post", "options"]

    @extend_schema(
        extensions=scope("files:write"),
        tags=["folders"],
        summary="Move (or rename) a folder: a job",
        description="Every file that is not deleted at or below `from` gets the same place "
        "under `to`. No byte moves. Answers the job at once (poll `GET /v1/jobs/{job_id}`); "
        "files created in or moved into `from` while it runs are moved too, and once it "
        "says `succeeded` no file is left in `from`. 429 `RATE_LIMITED` when the project "
        "has `SERVICE_JOB_MAX_ACTIVE_PER_PROJECT` jobs pending or running.",
        request=FolderMoveRequest,
        responses={**JOB_STARTED, **errors_of(*JOB_REFUSALS)},
    )
    def move(self, request: Request) -> Response:
        body = validated(FolderMoveRequest, request.data)
        job = services.folder_move(
            tenant=tenant_of(request), source=body["from"], target=body["to"]
        )
        answer: Data[JobJson] = {"data": job_json(job)}
        return Response(answer, status=202)

    @extend_schema(
        extensions=scope("files:write"),
        tags=["folders"],
        summary="Delete every file of a folder (soft): a job",
        description="Every file at or below `path` is deleted as `DELETE /v1/files/{file_id}` "
        "would (restorable during the grace window), files that arrive in it while the job "
        "runs included.",
        request=FolderRequest,
        responses={**JOB_STARTED, **errors_of(*JOB_REFUSALS)},
    )
    def delete(self, request: Request) -> Response:
        body = validated(FolderRequest, request.data)
        job = services.folder_delete(tenant=tenant_of(request), path=body["path"])
        answer: Data[JobJson] = {"data": job_json(job)}
        return Response(answer, status=202)

    @extend_schema(
        extensions=scope("files:write"),
        tags=["folders"],
        summary="Restore every deleted file of a folder: a job",
        description="Every deleted file at or below `path` whose bytes are not purged yet is "
        "restored as `POST /v1/files/{file_id}/restore` would.",
        request=FolderRequest,
        responses={**JOB_STARTED, **errors_of(*JOB_REFUSALS)},
    )
    def restore(self, request: Request) -> Response:
        body = validated(FolderRequest, request.data)
        job = services.folder_restore(tenant=tenant_of(request), path=body["path"])
        answer: Data[JobJson] = {"data": job_json(job)}
        return Response(answer, status=202)


class FileBatchViewSet(viewsets.ViewSet):
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
        responses={200: Data[list[BatchResultJson]], **errors_of("IDEMPOTENCY_KEY_REUSED")},
    )
    def batch(self, request: Request) -> Response:
        body = validated(BatchRequest, request.data)
        key = idempotency_key(request)
        operations = body["operations"]
        _count_operations(request, len(operations))
        tenant = tenant_of(request)
        answer = services.files_batch(
            tenant=tenant,
            operations=[_operation(tenant, operation) for operation in operations],
            render=lambda outcomes: {"data": [_result(outcome, request) for outcome in outcomes]},
            idempotency_key=key,
            request_hash=request_fingerprint(request.data) if key is not None else "",
        )
        response = Response(answer.body)
        if answer.replayed:
            response["Idempotent-Replayed"] = "true"
        return response


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
