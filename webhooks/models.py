from __future__ import annotations

from django.db import models

from accounts.models import Project
from storage_service.fields import public_id_field


class Event(models.Model):
    """The transactional outbox: one row per event, written in the transaction of its change.

    Delivery to webhook endpoints reads these rows; an event is never lost because it is only
    ever created together with the change it describes.
    """

    class Type(models.TextChoices):
        FILE_CREATED = "file.created"
        FILE_UPLOADED = "file.uploaded"
        FILE_DOWNLOADED = "file.downloaded"
        FILE_REPLACED = "file.replaced"
        FILE_COPIED = "file.copied"
        FILE_RENAMED = "file.renamed"
        FILE_MOVED = "file.moved"
        FILE_METADATA_UPDATED = "file.metadata_updated"
        FILE_PROCESSED = "file.processed"
        FILE_PROCESSING_FAILED = "file.processing_failed"
        FILE_DELETED = "file.deleted"
        FILE_RESTORED = "file.restored"
        FILE_PURGED = "file.purged"
        UPLOAD_INITIATED = "upload.initiated"
        UPLOAD_COMPLETED = "upload.completed"
        UPLOAD_ABORTED = "upload.aborted"

    id = public_id_field("evt")
    # Indexed by event_project_created (project, -created_at).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    type = models.CharField(max_length=40, choices=Type.choices)
    data = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["project", "-created_at"], name="event_project_created")]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"
