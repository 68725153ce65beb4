"""Celery entry points; the work itself is in files.services."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from files import services
from files.usage import usage_fold

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
