"""Reads of jobs: one job (the list is JobViewSet's, filtered by jobs/filters.py)."""

from __future__ import annotations

from accounts.tenancy import Tenant
from jobs.models import Job
from storage_service.errors import JobNotFound
from storage_service.ids import looks_like_id


def job_get(*, tenant: Tenant, job_id: str) -> Job:
    """The tenant's job; a malformed, missing or foreign id is the same 404."""
    if not looks_like_id(job_id, "job"):
        raise JobNotFound("No such job.")
    job = Job.objects.for_tenant(tenant).filter(id=job_id).first()
    if job is None:
        raise JobNotFound("No such job.")
    return job
