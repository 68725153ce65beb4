from __future__ import annotations

from django.db import models
from django.db.models import Q

from accounts.models import Project, mode_field
from accounts.tenancy import Tenant
from storage_service.model_fields import public_id_field


class JobQuerySet(models.QuerySet["Job"]):
    def for_tenant(self, tenant: Tenant) -> JobQuerySet:
        """The only way to scope jobs: the tenant's project and mode, never one of them."""
        return self.filter(project_id=tenant.project_id, mode=tenant.mode)

    def active(self) -> JobQuerySet:
        return self.filter(status__in=Job.ACTIVE)


class Job(models.Model):
    """Work on many files (a folder move, delete or restore), done by workers in batches.

    What each type does is registered by the app that owns the work (jobs/kinds.py; files
    registers the folder operations).

    The row is the truth, a Celery message only a hint: ``cursor`` is the last file id done,
    written in the transaction of the batch that did it (with the files' changes and their
    events), so a worker killed mid-batch loses the whole batch and the next run starts from
    the cursor again; each file is changed exactly once. ``leased_until`` keeps a second
    worker (a duplicate message, the sweep) off a job that a live worker is running.
    """

    class Type(models.TextChoices):
        FOLDER_MOVE = "folder.move"
        FOLDER_DELETE = "folder.delete"
        FOLDER_RESTORE = "folder.restore"

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    ACTIVE = (Status.PENDING, Status.RUNNING)

    id = public_id_field("job")
    # Indexed by job_project_id (project, mode, -id).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    mode = mode_field()
    type = models.CharField(max_length=20, choices=Type.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    params = models.JSONField()
    files_total = models.IntegerField(null=True, blank=True)
    files_done = models.IntegerField(default=0)
    error = models.JSONField(null=True, blank=True)
    # The last file id the job has done (files are taken in id order); null before the first.
    cursor = models.CharField(max_length=40, null=True, blank=True)
    # Runs in a row that failed (a batch raised, or the run was lost with its lease held)
    # since the last batch committed; at SERVICE_JOB_MAX_ATTEMPTS the job ends failed.
    failed_attempts = models.PositiveSmallIntegerField(default=0)
    # Which run holds the job, until when; renewed with every batch.
    lease_token = models.CharField(max_length=32, blank=True)
    leased_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        # The table it was created with (in files): moved here in state only.
        db_table = "files_job"
        indexes = [
            # GET /v1/jobs: newest first (ids are time-ordered).
            models.Index(fields=["project", "mode", "-id"], name="job_project_id"),
            # The running-jobs cap per tenant and the sweep of jobs whose message was lost.
            models.Index(
                fields=["project", "mode"],
                name="job_active",
                condition=Q(status__in=["pending", "running"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.id} ({self.status})"
