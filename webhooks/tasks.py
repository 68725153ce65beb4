"""Celery entry points of webhook delivery; the work itself is in webhooks/delivery.py.

Every task here goes to the webhook queue (``CELERY_TASK_ROUTES``), served by its own worker.
A message is only a hint to look at some rows now: the task re-reads them and sends only
what is due, so a duplicate or a stale message does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from celery import shared_task

from storage_service.dbretry import DB_RETRY
from webhooks import delivery, replay, services
from webhooks.claims import project_has_due
from webhooks.outcomes import Retry

logger = logging.getLogger(__name__)


def schedule(retries: Sequence[Retry]) -> None:
    for retry in retries:
        services.enqueue(retry.ids, eta=retry.at)


@shared_task(name=services.DELIVER_TASK, **DB_RETRY)
def deliver(delivery_ids: list[str]) -> int:
    """Attempt the due ones of these deliveries (one event's, or one retry's).

    Returns once the attempts are started: the task's thread never waits for a receiver (a
    slow one would hold it, and with it every other project's deliveries). The outcomes are
    recorded, and the retries scheduled, when the attempts end (webhooks/dispatch.py).
    """
    return delivery.deliver_later(delivery_ids, schedule)


@shared_task(name="webhooks.tasks.sweep_due_deliveries")
def sweep_due_deliveries() -> int:
    """Beat: send every pending delivery overdue by more than the grace (a lost message)."""
    sent, retries = delivery.deliver_overdue()
    schedule(retries)
    if sent:
        logger.info("webhook sweep: %d overdue deliveries attempted", sent)
    for replay_id in replay.replays_stalled():
        logger.info("webhook sweep: replay %d resumed", replay_id)
        replay.replay_continue(replay_id=replay_id)
    return sent


@shared_task(name=services.DRAIN_TASK, **DB_RETRY)
def drain_project(project_id: str) -> int:
    """One step of the project's drain (webhooks/services.py): its oldest due deliveries,
    a few slots' worth; the next step is sent when their outcomes are written, and the
    chain ends at a step that finds none."""
    claimed = delivery.drain_step(
        project_id, schedule, on_recorded=lambda: services.drain_continue(project_id)
    )
    if not claimed:
        services.drain_end(project_id, has_due=lambda: project_has_due(project_id))
    return claimed


@shared_task(name=replay.STEP_TASK, **DB_RETRY)
def replay_step(replay_id: int) -> int:
    """Make a replay's next batch of deliveries when the endpoint is ready for it (see
    webhooks/replay.py); the step sends its messages, the next step's among them."""
    return len(replay.replay_continue(replay_id=replay_id).made)
