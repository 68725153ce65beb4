"""Celery entry points; the work itself is in files.services."""

from __future__ import annotations

import logging

from celery import shared_task

from files import services

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
