"""Jobs: starting one (the tenant's cap), and running it: batches on the workers, resumed
after any failure, each file changed once. What a batch of each type does is registered by
the app that owns it (jobs/kinds.py).

A job's row is the truth and a Celery message only a hint. A run (one task execution, with
its own token) takes a lease on the row, does batches for up to ``SERVICE_JOB_SLICE_SECONDS``
and hands the job back to the queue, so a long job takes turns with other work. Each batch is
one transaction: the job row locked, the next files after the job's cursor changed (in id
order) with their events, and the cursor and ``filesDone`` moved on. A worker killed
mid-batch loses that whole batch; the next run, sent by the sweep once the dead run's lease
runs out, starts from the committed cursor. So each file is changed exactly once.

A job that keeps failing ends: a run whose batch raises, or that is lost with its lease held
(its worker died), counts one failed attempt; a batch that commits clears the count. At
``SERVICE_JOB_MAX_ATTEMPTS`` failed attempts in a row the job ends ``failed`` with
``INTERNAL_ERROR`` (the files done so far stay done), rather than being sent again for ever.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any, Literal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.tenancy import Tenant
from events.services import event_record
from jobs.kinds import kind_of
from jobs.models import Job
from storage_service.celery import app
from storage_service.errors import RateLimited, error_body

logger = logging.getLogger(__name__)

# Sent by name: jobs/tasks.py calls these services, so they never import it.
RUN_JOB_TASK = "jobs.tasks.run_job"
# Seconds a client is asked to wait when the tenant has its cap of jobs running.
JOB_CAP_RETRY_AFTER = 5

Outcome = Literal["more", "done", "skipped", "failed"]


def job_enqueue(job_id: str) -> None:
    """Send a job's run; never raise (the job sweep sends what a lost message would have)."""
    try:
        app.send_task(RUN_JOB_TASK, args=(job_id,), retry=False)
    except Exception:
        logger.warning("could not enqueue job %s; the sweep will", job_id)


def job_create(tenant: Tenant, type: Job.Type, params: dict[str, Any]) -> Job:
    """The job row, and its message after commit.

    The tenant's jobs are counted under a transaction-scoped advisory lock on the tenant, so
    two requests at once cannot both take the last place under the cap.
    """
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"jobs:{tenant.project_id}:{tenant.mode}"],
            )
        cap = settings.SERVICE_JOB_MAX_ACTIVE_PER_PROJECT
        if Job.objects.for_tenant(tenant).active().count() >= cap:
            raise RateLimited(
                f"At most {cap} jobs may be pending or running at once; retry when one ends.",
                retry_after=JOB_CAP_RETRY_AFTER,
                details={"maxActiveJobs": cap},
            )
        job = Job.objects.create(**tenant.owner(), type=type, params=params)
        transaction.on_commit(lambda: job_enqueue(job.id))
    return job


def _active_job_locked(job_id: str) -> QuerySet[Job]:
    """The job while it is pending or running, with its project, locked for this transaction;
    empty when another transaction holds it (that one is running it)."""
    return (
        Job.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("project")
        .filter(id=job_id, status__in=Job.ACTIVE)
    )


def job_run(*, job_id: str, token: str, slice_seconds: float) -> Outcome:
    """Batches of the job until it is done or the slice is spent ("more": send it again).
    A slice that ends gives the lease up, so the next message's run may take the job at once.
    A batch that raises is rolled back and counted (``_attempt_failed``); the sweep sends the
    job again once ``SERVICE_JOB_LEASE_SECONDS`` have passed ("failed")."""
    deadline = time.monotonic() + slice_seconds
    if _take_over(job_id=job_id, token=token) == "done":
        return "done"
    while True:
        try:
            outcome = job_step(job_id=job_id, token=token)
        except Exception:
            logger.exception("job %s: a batch failed", job_id)
            _attempt_failed(job_id=job_id, token=token)
            return "failed"
        if outcome != "more":
            return outcome
        if time.monotonic() >= deadline:
            Job.objects.filter(id=job_id, lease_token=token).update(
                lease_token="", leased_until=None
            )
            return outcome


def job_step(*, job_id: str, token: str) -> Outcome:
    """One batch of the job, in one transaction.

    1. The job row, locked with SKIP LOCKED: a batch of another run in progress, a lease of
       another run that has not run out, or a job already ended: nothing to do.
    2. The first batch marks it running and counts ``filesTotal``.
    3. The next batch after the cursor: the files, their events, the cursor and
       ``filesDone`` commit together.
    4. When nothing is left after the cursor, the last step (``_finish``), still in this
       transaction.
    """
    now = timezone.now()
    with transaction.atomic():
        job = _active_job_locked(job_id).first()
        if job is None:
            return "skipped"
        leased = job.leased_until is not None and job.leased_until > now
        if leased and job.lease_token != token:
            return "skipped"
        tenant = Tenant.of(job)
        job.lease_token = token
        job.leased_until = now + timedelta(seconds=settings.SERVICE_JOB_LEASE_SECONDS)
        job.failed_attempts = 0  # this batch commits with the job row, or nothing does
        kind = kind_of(job.type)
        if job.status == Job.Status.PENDING:
            job.status = Job.Status.RUNNING
            job.files_total = kind.left(job, tenant)
        size = settings.SERVICE_JOB_BATCH_SIZE
        batch = kind.batch(job, tenant, after=job.cursor or "", size=size)
        if batch.count:
            job.cursor = batch.last_id
            job.files_done += batch.count
            job.save()
            return "more"
        _finish(job, tenant)
        return "done"


def _finish(job: Job, tenant: Tenant) -> None:
    """The job's last step: nothing is left after its cursor.

    Files that reached the folder behind the cursor while the job ran (created in it, moved
    into it, restored into it) are changed now, from the start of the folder, until none is
    left; the job then ends, with its ``folder.*`` event, in the same transaction. So once a
    job says ``succeeded``, no file it should have changed is left. A move whose resulting
    path would be too long for a file that arrived meanwhile leaves that file in place and
    fails the job (the others are moved).
    """
    size = settings.SERVICE_JOB_BATCH_SIZE
    kind = kind_of(job.type)
    while (stragglers := kind.batch(job, tenant, after="", size=size)).count:
        job.files_done += stragglers.count
    left = kind.left(job, tenant)
    if left:
        job.status = Job.Status.FAILED
        job.error = dict(
            error_body(
                "VALIDATION_ERROR",
                f"{left} file(s) arrived in the folder during the move whose path would be "
                "too long under the destination; they were left in place.",
                {"filesLeft": left},
            )["error"]
        )
    else:
        job.status = Job.Status.SUCCEEDED
    _end(job, tenant)


def _take_over(*, job_id: str, token: str) -> Outcome | None:
    """A run's first look at its job, committed on its own: a lease of another run that ran
    out means that run was lost (its worker died, perhaps in this very batch), one failed
    attempt. Counted before this run's first batch, so a batch that kills every worker that
    runs it still reaches the limit. "done": the limit was reached and the job ended."""
    now = timezone.now()
    with transaction.atomic():
        job = (
            _active_job_locked(job_id)
            .filter(leased_until__lte=now)
            .exclude(lease_token__in=("", token))
            .first()
        )
        if job is None:
            return None
        logger.warning("job %s: its previous run was lost; taken over", job_id)
        return _count_failure(job, token=token)


def _attempt_failed(*, job_id: str, token: str) -> None:
    """After a batch of this run raised (and was rolled back): one failed attempt, and the
    lease given up so that the sweep sends the job again after a lease's time. Never raises
    (when the database is away, the lease running out counts the attempt instead)."""
    try:
        with transaction.atomic():
            job = _active_job_locked(job_id).filter(lease_token__in=("", token)).first()
            if job is not None:
                _count_failure(job, token="")
    except Exception:
        logger.exception("job %s: its failed attempt could not be recorded", job_id)


def _count_failure(job: Job, *, token: str) -> Outcome | None:
    """One more failed attempt on the locked ``job``; at the limit the job ends failed."""
    tenant = Tenant.of(job)
    job.failed_attempts += 1
    limit = settings.SERVICE_JOB_MAX_ATTEMPTS
    if job.failed_attempts >= limit:
        job.status = Job.Status.FAILED
        job.error = dict(
            error_body(
                "INTERNAL_ERROR",
                f"The job failed {job.failed_attempts} times in a row and was stopped; the "
                f"{job.files_done} file(s) it changed before stay changed. Starting the "
                "operation again goes on with the files left.",
                {"attempts": job.failed_attempts},
            )["error"]
        )
        _end(job, tenant)
        return "done"
    job.lease_token = token
    job.leased_until = (
        timezone.now() + timedelta(seconds=settings.SERVICE_JOB_LEASE_SECONDS) if token else None
    )
    job.save()
    return None


def _end(job: Job, tenant: Tenant) -> None:
    """The job's status is final: saved, with its ``folder.*`` event."""
    job.files_total = job.files_done
    job.finished_at = timezone.now()
    job.lease_token, job.leased_until = "", None
    job.save()
    data: dict[str, Any] = {
        "jobId": job.id,
        **job.params,
        "files": job.files_done,
        "status": job.status,
    }
    if job.error is not None:
        data["error"] = job.error
    event_record(tenant=tenant, type=kind_of(job.type).finished_event, data=data)


def jobs_lost() -> list[str]:
    """The sweep: jobs pending or running that no run holds (a lease that ran out: its worker
    died or its message was lost) or that no run took since they were made (a lost first
    message); their runs are sent again. A duplicate message finds the lease and does nothing."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.SERVICE_JOB_LEASE_SECONDS)
    lost = Q(leased_until__lt=now) | Q(leased_until__isnull=True, updated_at__lt=stale)
    return list(Job.objects.active().filter(lost).values_list("id", flat=True))
