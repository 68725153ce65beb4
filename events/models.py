from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from accounts.models import Project, mode_field
from accounts.tenancy import Tenant
from storage_service.model_fields import public_id_field


class EventQuerySet(models.QuerySet["Event"]):
    def for_tenant(self, tenant: Tenant) -> EventQuerySet:
        return self.filter(project_id=tenant.project_id, mode=tenant.mode)

    def retained(self) -> EventQuerySet:
        """Within the retention window: what the sweep has not deleted yet is not shown
        either once it is past it."""
        cutoff = timezone.now() - timedelta(days=int(settings.SERVICE_EVENT_RETENTION_DAYS))
        return self.filter(created_at__gte=cutoff)


class Event(models.Model):
    """The transactional outbox: one row per event, written in the transaction of its change.

    Apps above this one write what each event brings with it in the same statement (webhooks:
    a delivery per subscribed endpoint, events/outbox.py); an event is never lost because it is
    only ever created together with the change it describes.
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
        FILE_EXPIRED = "file.expired"
        UPLOAD_INITIATED = "upload.initiated"
        UPLOAD_COMPLETED = "upload.completed"
        UPLOAD_ABORTED = "upload.aborted"
        WEBHOOK_ENDPOINT_DISABLED = "webhook_endpoint.disabled"
        FOLDER_MOVED = "folder.moved"
        FOLDER_DELETED = "folder.deleted"
        FOLDER_RESTORED = "folder.restored"

    id = public_id_field("evt")
    # Indexed by event_project_created_id (project, mode, -created_at, -id).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    mode = mode_field()
    type = models.CharField(max_length=40, choices=Type.choices)
    data = models.JSONField()
    created_at = models.DateTimeField()

    objects = EventQuerySet.as_manager()

    class Meta:
        # The table it was created with (in webhooks): moved here in state only.
        db_table = "webhooks_event"
        indexes = [
            # GET /v1/events, newest first, keyset on (created_at, id); a replay's window.
            models.Index(
                fields=["project", "mode", "-created_at", "-id"], name="event_project_created_id"
            ),
            # GET /v1/events?type=..., the same order.
            models.Index(
                fields=["project", "mode", "type", "-created_at", "-id"],
                name="event_project_type_created",
            ),
            # The purge's scrub finds a file's events by it (events.services.events_scrub_file).
            models.Index(KeyTextTransform("fileId", "data"), name="event_file"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"
