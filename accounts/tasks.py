"""The accounts app's periodic work (run by the Celery worker, scheduled by beat)."""

from __future__ import annotations

from celery import shared_task

from accounts.bandwidth import bandwidth_fold
from accounts.console import snapshot_all


@shared_task
def snapshot_usage() -> int:
    """Today's usage snapshot of every tenant, for the staff console's 30-day chart."""
    return snapshot_all()


@shared_task
def fold_bandwidth() -> int:
    """The bandwidth counted in Redis (delivery URLs' redirects) into the day's rows."""
    return bandwidth_fold()
