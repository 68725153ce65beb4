"""HTTP only, for folder operations: each starts a job (jobs/ runs it, files' batches change
the files). The table of endpoints is urls.py; each method's ``@extend_schema`` is its entry
in the OpenAPI document (see files/views.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import tenant_of
from accounts.scopes import scope
from files import services
from files.serializers import FolderMoveRequest, FolderRequest
from jobs.models import Job
from jobs.serializers import job_json
from jobs.shapes import JobJson
from storage_service.openapi import Links, errors_of
from storage_service.operations import Decorator
from storage_service.policies import SharedPolicies
from storage_service.serializers import StrictSerializer, validated
from storage_service.shapes import Data

JOB_LINKS = {"jobs_retrieve": {"job_id": "$response.body#/data/id"}}


def folder_job(*, summary: str, description: str, request: type[StrictSerializer]) -> Decorator:
    """The entry of a folder operation: each answers its job at once (the work is the
    workers'), or refuses an unknown folder or a project with too many jobs running."""
    return extend_schema(
        extensions=scope("files:write"),
        tags=["folders"],
        summary=summary,
        description=description,
        request=request,
        responses={
            202: Links(Data[JobJson], JOB_LINKS),
            **errors_of("FOLDER_NOT_FOUND", "RATE_LIMITED"),
        },
    )


def job_started(job: Job) -> Response:
    answer: Data[JobJson] = {"data": job_json(job)}
    return Response(answer, status=202)


class FolderOperationViewSet(SharedPolicies, viewsets.ViewSet):
    # Every route here is a POST: without this, the action named "delete" would also be
    # taken for the HTTP method's handler (DRF advertises DELETE in Allow and answers it).
    http_method_names = ["post", "options"]

    @folder_job(
        summary="Move (or rename) a folder: a job",
        description="Every file that is not deleted at or below `from` gets the same place "
        "under `to`. No byte moves. Answers the job at once (poll `GET /v1/jobs/{job_id}`); "
        "files created in or moved into `from` while it runs are moved too, and once it "
        "says `succeeded` no file is left in `from`. 429 `RATE_LIMITED` when the project "
        "has `SERVICE_JOB_MAX_ACTIVE_PER_PROJECT` jobs pending or running.",
        request=FolderMoveRequest,
    )
    def move(self, request: Request) -> Response:
        body = validated(FolderMoveRequest, request.data)
        return job_started(
            services.folder_move(tenant=tenant_of(request), source=body["from"], target=body["to"])
        )

    @folder_job(
        summary="Delete every file of a folder (soft): a job",
        description="Every file at or below `path` is deleted as `DELETE /v1/files/{file_id}` "
        "would (restorable during the grace window), files that arrive in it while the job "
        "runs included.",
        request=FolderRequest,
    )
    def delete(self, request: Request) -> Response:
        body = validated(FolderRequest, request.data)
        return job_started(services.folder_delete(tenant=tenant_of(request), path=body["path"]))

    @folder_job(
        summary="Restore every deleted file of a folder: a job",
        description="Every deleted file at or below `path` whose bytes are not purged yet is "
        "restored as `POST /v1/files/{file_id}/restore` would.",
        request=FolderRequest,
    )
    def restore(self, request: Request) -> Response:
        body = validated(FolderRequest, request.data)
        return job_started(services.folder_restore(tenant=tenant_of(request), path=body["path"]))
