"""Celery entry points; the work itself is in variants.services."""

from __future__ import annotations

import contextlib
import logging
import signal
from types import FrameType
from typing import Any

from billiard.einfo import ExceptionInfo
from celery import Task, shared_task
from celery.exceptions import TimeLimitExceeded
from django.conf import settings

from storage_service.celery import app
from storage_service.dbretry import DB_RETRY
from variants import services, slots

logger = logging.getLogger(__name__)

FAIL_TIMED_OUT_TASK = "variants.tasks.fail_timed_out"


class TransformTask(Task):
    def on_failure(
        self,
        exc: BaseException,
        task_id: str,
        args: Any,
        kwargs: Any,
        einfo: ExceptionInfo | None,
    ) -> None:
        """At the hard time limit the pool kills the process and calls this in the worker's
        parent process: a message marks the variant failed (the killed process cannot), so the
        stale sweep does not run the same too-heavy transform again."""
        if isinstance(exc, TimeLimitExceeded) and args:
            try:
                app.send_task(
                    FAIL_TIMED_OUT_TASK,
                    args=[args[0], settings.SERVICE_VARIANT_TIME_LIMIT_SECONDS],
                )
            except Exception:
                logger.warning("variant %s: could not report its time-out", args[0])


def _time_up(signum: int, frame: FrameType | None) -> None:
    raise services.TimeUp()


def _raise_time_up_at_the_soft_limit() -> None:
    """The pool signals the soft limit with SIGUSR1; Celery's handler raises an Exception that
    a hanging store call would swallow (see services.TimeUp). Set per task, since the pool
    installs its own handler after the process starts; only possible in a process's main
    thread (prefork and solo pools)."""
    if hasattr(signal, "SIGUSR1"):
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGUSR1, _time_up)


# Below SERVICE_VARIANT_STALE_SECONDS (checked in settings): a transform is never still
# running when the sweep would take it for lost. Applies to prefork workers (`make run`).
_LIMITS: dict[str, Any] = {"time_limit": settings.SERVICE_VARIANT_TIME_LIMIT_SECONDS}
if settings.SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS:
    _LIMITS["soft_time_limit"] = settings.SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS


@shared_task(
    name="variants.tasks.process_variant",
    base=TransformTask,
    bind=True,
    max_retries=None,
    **_LIMITS,
    **DB_RETRY,
)
def process_variant(self: Task, variant_id: str) -> str:
    _raise_time_up_at_the_soft_limit()
    project_id = services.variant_waiting_project(variant_id=variant_id)
    if project_id is None:
        return "skipped"  # done, or claimed by another worker
    with slots.slot(project_id, variant_id) as held:
        if held:
            outcome = services.variant_process(variant_id=variant_id)
            if outcome.status == "failed":
                logger.info("variant %s failed: %s", variant_id, outcome.reason)
            return outcome.status
    # The project has its share of transforms running: ask again later, so this one waits
    # behind its own project's work and not in front of other projects'.
    services.variant_defer(variant_id=variant_id)
    raise self.retry(countdown=slots.defer_seconds(self.request.retries))


@shared_task(name=FAIL_TIMED_OUT_TASK, **DB_RETRY)
def fail_timed_out(variant_id: str, seconds: int) -> str:
    return services.variant_fail_timed_out(variant_id=variant_id, seconds=seconds).status


@shared_task(name="variants.tasks.requeue_stale_variants")
def requeue_stale_variants() -> int:
    moved = services.variants_requeue_stale()
    if moved:
        logger.info("variant sweep: %d stale variant(s) sent again or failed", moved)
    return moved
