"""Celery entry points of jobs; the work itself is in jobs/services.py."""

from __future__ import annotations

import logging
import secrets

from celery import shared_task
from django.conf import settings

from jobs import services
from storage_service.dbretry import DB_RETRY

logger = logging.getLogger(__name__)


@shared_task(name="jobs.tasks.run_job", **DB_RETRY)
def run_job(job_id: str) -> str:
    """Run the job for a slice of time, then send it again if it is not done (the job's row
    says where it stopped; a run killed mid-batch is taken over from there)."""
    outcome = services.job_run(
        job_id=job_id,
        token=secrets.token_hex(16),
        slice_seconds=settings.SERVICE_JOB_SLICE_SECONDS,
    )
    if outcome == "more":
        services.job_enqueue(job_id)
    return outcome


@shared_task(name="jobs.tasks.sweep_jobs")
def sweep_jobs() -> int:
    """Beat: send again every job pending or running that no live run holds."""
    lost = services.jobs_lost()
    for job_id in lost:
        services.job_enqueue(job_id)
    if lost:
        logger.info("job sweep: %d job(s) sent again", len(lost))
    return len(lost)
