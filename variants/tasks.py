"""Celery entry points; the work itself is in variants.services."""

from __future__ import annotations

import logging

from celery import shared_task

from variants import services

logger = logging.getLogger(__name__)


@shared_task(name="variants.tasks.process_variant")
def process_variant(variant_id: str) -> str:
    outcome = services.variant_process(variant_id=variant_id)
    if outcome.status == "failed":
        logger.info("variant %s failed: %s", variant_id, outcome.reason)
    return outcome.status


@shared_task(name="variants.tasks.requeue_stale_variants")
def requeue_stale_variants() -> int:
    moved = services.variants_requeue_stale()
    if moved:
        logger.info("variant sweep: %d stale variant(s) sent again or failed", moved)
    return moved
