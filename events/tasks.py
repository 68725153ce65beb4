"""Celery entry points of the events app."""

from __future__ import annotations

import logging

from celery import shared_task

from events import services

logger = logging.getLogger(__name__)


@shared_task(name="events.tasks.sweep_old_events")
def sweep_old_events() -> int:
    """Beat: delete events and deliveries past ``SERVICE_EVENT_RETENTION_DAYS`` (bounded per
    run; the next run goes on where this one stopped)."""
    report = services.events_delete_expired()
    if report.deliveries or report.events:
        logger.info(
            "retention: %d deliveries and %d events deleted in %d batches%s",
            report.deliveries,
            report.events,
            len(report.batch_seconds),
            "" if report.finished else " (more left for the next run)",
        )
    return report.deliveries + report.events
