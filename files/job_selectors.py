"""Reads of jobs: one job, and a tenant's jobs newest first (keyset pages on the id, which
is time-ordered; served by job_project_id)."""

from __future__ import annotations

from accounts.tenancy import Tenant
from files.models import Job
from storage_service.errors import JobNotFound
from storage_service.ids import looks_like_id
from storage_service.pagination import Keyset, Page

NEWEST_FIRST = Keyset(field="id", column="id", descending=True, scope="jobs:id:desc")


def job_get(*, tenant: Tenant, job_id: str) -> Job:
    """The tenant's job; a malformed, missing or foreign id is the same 404."""
    if not looks_like_id(job_id, "job"):
        raise JobNotFound("No such job.")
    job = Job.objects.for_tenant(tenant).filter(id=job_id).first()
    if job is None:
        raise JobNotFound("No such job.")
    return job


def job_list(*, tenant: Tenant, limit: int, cursor: str | None) -> Page[Job]:
    queryset = NEWEST_FIRST.after(Job.objects.for_tenant(tenant), cursor)
    rows = list(queryset.order_by(*NEWEST_FIRST.order_by())[: limit + 1])
    return NEWEST_FIRST.page(rows, limit)
