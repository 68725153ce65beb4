"""Sending deliveries, as the tasks and the sweep ask for it: claim, dispatch, record.

One call handles a batch (an event's deliveries to all its endpoints, a drain's step, or a
sweep's page), in four jobs, each in its own module (imports run down this list):

1. webhooks/dispatch.py starts the attempts and hands the outcomes on;
2. webhooks/admission.py gives each attempt a slot of its project, host and process, or a
   place in line, or defers it;
3. webhooks/outcomes.py writes the outcomes, the retries' times and the endpoints' streaks;
4. webhooks/claims.py leases the due rows.

The Celery task (webhooks/tasks.py) only claims and dispatches (``deliver_later``): its
thread is free again at once, however slow the receivers; the batch is recorded by the
process's recording thread when its last attempt ends, and the retries enqueued from there.
If a message is lost, the row still says when it is due and the sweep sends it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from webhooks.claims import Claimed, claim_by_id, claim_overdue, claim_project_due
from webhooks.dispatch import RetryHandler, dispatch
from webhooks.outcomes import Retry, record


def process(claimed: Sequence[Claimed]) -> list[Retry]:
    """Send a claim and wait for its outcomes to be written; the retries to schedule
    (deferred rows among them)."""
    if not claimed:
        return []
    batch = dispatch(claimed, record_in_caller=True)
    batch.done.wait()
    retries = batch.retries + record(batch.outcomes, batch.claimed_at)
    return sorted(retries, key=lambda retry: retry.at)


def deliver(ids: Iterable[str]) -> list[Retry]:
    """Attempt those of these deliveries that are due now, and wait for the outcomes."""
    return process(claim_by_id(list(ids)))


def deliver_later(ids: Iterable[str], on_retries: RetryHandler) -> int:
    """The task's way: claim, start the attempts, return at once (how many were claimed)."""
    claimed = claim_by_id(list(ids))
    if claimed:
        dispatch(claimed, on_retries)
    return len(claimed)


def drain_step(project_id: str, on_retries: RetryHandler, on_recorded: Callable[[], None]) -> int:
    """One step of a project's drain: claim its oldest due deliveries (``drain_step_size``),
    start them, return at once; ``on_recorded`` runs once their outcomes are written (the
    next step). How many were claimed: none ends the drain."""
    claimed = claim_project_due(project_id)
    if claimed:
        dispatch(claimed, on_retries, on_recorded=on_recorded)
    return len(claimed)


def deliver_overdue(
    *, batch_size: int = 200, budget_seconds: float = 60.0
) -> tuple[int, list[Retry]]:
    """The sweep: send overdue deliveries, page by page, for at most ``budget_seconds``."""
    deadline = time.monotonic() + budget_seconds
    sent = 0
    retries: list[Retry] = []
    while time.monotonic() < deadline:
        claimed = claim_overdue(batch_size)
        if not claimed:
            break
        sent += len(claimed)
        retries.extend(process(claimed))
    return sent, retries
