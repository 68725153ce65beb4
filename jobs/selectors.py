"""Reads of jobs: one job (the list is JobViewSet's, filtered by jobs/filters.py)."""

from __future__ import annotations

from accounts.tenancy import Tenant
from jobs.models import Job
from storage_service.errors import JobNotFound
from storage_service.lookups import found_by_id


def job_get(*, tenant: Tenant, job_id: str) -> Job:
    """The tenant's job; a malformed, missing or foreign id is the same 404."""
    return found_by_id(
        Job.objects.for_tenant(tenant),
        job_id,
        prefix="job",
        missing=JobNotFound,
        message="No such job.",
    )
