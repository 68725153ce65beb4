"""Celery entry points; the work itself is in uploads.services."""

from __future__ import annotations

import logging

from celery import shared_task

from uploads import services

logger = logging.getLogger(__name__)


@shared_task(name="uploads.tasks.expire_multipart_uploads")
def expire_multipart_uploads() -> int:
    expired = services.uploads_expire()
    logger.info("multipart sweep: %d upload(s) expired", expired)
    return expired
