from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from accounts.models import Project, mode_field
from accounts.tenancy import Tenant
from files.models import File, StoredObject
from storage_service.model_fields import public_id_field


class UploadSessionQuerySet(models.QuerySet["UploadSession"]):
    def for_tenant(self, tenant: Tenant) -> UploadSessionQuerySet:
        return self.filter(project_id=tenant.project_id, mode=tenant.mode)


class UploadSession(models.Model):
    """A multipart upload: the client PUTs parts to the store, then completes or aborts.

    It sits on the store's own multipart upload, whose id (``provider_upload_id``) is a
    bearer of that upload and is never shown to clients: not in a response, nor an event.
    """

    class Status(models.TextChoices):
        ACTIVE = "active"
        ABORTED = "aborted"
        COMPLETED = "completed"

    class AbortReason(models.TextChoices):
        CLIENT = "client"  # DELETE /v1/uploads/multipart/<id>
        EXPIRED = "expired"  # the expiry sweep
        REFUSED = "refused"  # the assembled object failed verification
        LOST = "lost"  # the store no longer had the upload

    id = public_id_field("upload")
    # Lookups are by id (the primary key) and then checked against the project and mode.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+", db_index=False)
    mode = mode_field()
    file = models.ForeignKey(File, on_delete=models.PROTECT, related_name="+")
    # Never looked up by object; the object is reached from the session.
    stored_object = models.ForeignKey(
        StoredObject, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    provider_upload_id = models.CharField(max_length=1024)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    size = models.BigIntegerField()
    part_size = models.BigIntegerField()
    part_count = models.PositiveIntegerField()
    expires_at = models.DateTimeField()
    abort_reason = models.CharField(max_length=10, choices=AbortReason.choices, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    aborted_at = models.DateTimeField(null=True, blank=True)

    objects = UploadSessionQuerySet.as_manager()

    class Meta:
        indexes = [
            # The expiry sweep: active sessions, oldest expiry first.
            models.Index(
                fields=["expires_at"], name="upload_active_expiry", condition=Q(status="active")
            )
        ]

    def __str__(self) -> str:
        return self.id


class UploadTokenQuerySet(models.QuerySet["UploadToken"]):
    def for_tenant(self, tenant: Tenant) -> UploadTokenQuerySet:
        return self.filter(project_id=tenant.project_id, mode=tenant.mode)


class UploadToken(models.Model):
    """A short-lived credential (``ut_…``) that lets a browser upload a bounded set of files
    into its project and mode, and nothing else (uploads/tokens.py)."""

    id = public_id_field("utk")
    # Indexed by uploadtoken_list (project, mode, id).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    mode = mode_field()
    # Only a keyed hash of the token is stored, as for API keys (accounts/keys.py).
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    path = models.CharField(max_length=4096, null=True, blank=True)
    max_file_size_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    allowed_content_types = ArrayField(models.CharField(max_length=255), null=True, blank=True)
    max_files = models.PositiveIntegerField(default=1)
    # Counted by a conditional UPDATE in each start's transaction (uploads/auth.py), so
    # parallel starts never pass max_files.
    files_started = models.PositiveIntegerField(default=0)
    allowed_origins = ArrayField(models.CharField(max_length=2048), null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = UploadTokenQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["project", "mode", "-id"], name="uploadtoken_list")]
        constraints = [
            models.CheckConstraint(
                condition=Q(files_started__lte=models.F("max_files")),
                name="uploadtoken_files_within_max",
            )
        ]

    def __str__(self) -> str:
        return self.id
