"""Celery entry points; the work itself is in files.services."""

from __future__ import annotations

import logging
import secrets

from celery import shared_task
from django.conf import settings

from files import services
from files.usage import usage_fold
from storage_service.dbretry import DB_RETRY

logger = logging.getLogger(__name__)


@shared_task(name="files.tasks.purge_deleted_files")
def purge_deleted_files() -> int:
    report = services.files_purge_expired()
    logger.info(
        "purge sweep: %d file(s) purged, %d object(s) removed",
        len(report.files),
        report.objects_removed,
    )
    return len(report.files)


@shared_task(name="files.tasks.expire_pending_uploads")
def expire_pending_uploads() -> int:
    expired = services.files_expire_pending()
    logger.info("pending sweep: %d upload(s) expired", expired)
    return expired


@shared_task(name="files.tasks.expire_files")
def expire_files() -> int:
    expired = services.files_expire_due()
    logger.info("expiry sweep: %d file(s) expired", expired)
    return expired


@shared_task(name="files.tasks.fold_usage")
def fold_usage() -> int:
    """Beat: fold the usage delta rows of the tenants with the most of them."""
    folded = usage_fold(max_tenants=settings.SERVICE_USAGE_FOLD_MAX_TENANTS)
    if folded:
        logger.info("usage fold: %d tenant(s) folded", folded)
    return folded


@shared_task(name="files.tasks.run_job", **DB_RETRY)
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


@shared_task(name="files.tasks.sweep_jobs")
def sweep_jobs() -> int:
    """Beat: send again every job pending or running that no live run holds."""
    lost = services.jobs_lost()
    for job_id in lost:
        services.job_enqueue(job_id)
    if lost:
        logger.info("job sweep: %d job(s) sent again", len(lost))
    return len(lost)
