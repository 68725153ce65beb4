"""HTTP only: ``GET /v1/jobs`` and ``GET /v1/jobs/<id>``. Routes are in storage_service/urls.py."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import tenant_of
from accounts.scopes import scope
from jobs import selectors
from jobs.filters import JobFilterSet
from jobs.models import Job, JobQuerySet
from jobs.serializers import job_json
from jobs.shapes import JobJson
from storage_service.openapi import Shape, errors_of, path_id
from storage_service.pagination import CursorPagination
from storage_service.policies import SharedPolicies
from storage_service.shapes import Data

JOB_ID = path_id("job_id", "job")


class JobViewSet(SharedPolicies, viewsets.GenericViewSet):
    pagination_class = CursorPagination
    filterset_class = JobFilterSet
    ordering = ("-id",)  # newest first: ids are time-ordered
    cursor_scope = "jobs:id:desc"

    def get_queryset(self) -> JobQuerySet:
        return Job.objects.for_tenant(tenant_of(self.request))

    @extend_schema(
        extensions=scope("files:read"),
        tags=["jobs"],
        summary="List jobs, newest first (keyset pages)",
        responses={200: Shape(JobJson)},
    )
    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None  # pagination_class is set
        return self.get_paginated_response([job_json(job) for job in page])

    @extend_schema(
        extensions=scope("files:read"),
        tags=["jobs"],
        summary="Get a job: its status and progress",
        parameters=[JOB_ID],
        responses={200: Shape(Data[JobJson]), **errors_of("JOB_NOT_FOUND")},
    )
    def retrieve(self, request: Request, job_id: str) -> Response:
        job = selectors.job_get(tenant=tenant_of(request), job_id=job_id)
        answer: Data[JobJson] = {"data": job_json(job)}
        return Response(answer)
