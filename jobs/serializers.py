"""The renderers of jobs, annotated with their shapes (jobs/shapes.py)."""

from __future__ import annotations

from typing import cast

from jobs.models import Job
from jobs.shapes import JobJson, JobStatus, JobType
from storage_service.errors import ErrorDetailJson
from storage_service.timefmt import iso, iso_required


def job_json(job: Job) -> JobJson:
    error = cast(ErrorDetailJson, job.error) if job.error is not None else None
    return {
        "id": job.id,
        "type": cast(JobType, job.type),
        "status": cast(JobStatus, job.status),
        "params": job.params,
        "filesTotal": job.files_total,
        "filesDone": job.files_done,
        "error": error,
        "createdAt": iso_required(job.created_at),
        "updatedAt": iso_required(job.updated_at),
        "finishedAt": iso(job.finished_at),
    }
