from __future__ import annotations

from django.db import models
from django.db.models import Q

from accounts.models import Project, mode_field
from accounts.tenancy import Tenant
from files.models import File, StoredObject
from storage_service.model_fields import public_id_field


class VariantQuerySet(models.QuerySet["Variant"]):
    def for_tenant(self, tenant: Tenant) -> VariantQuerySet:
        return self.filter(project_id=tenant.project_id, mode=tenant.mode)


class Variant(models.Model):
    """A derived copy of one version of an image file, made by a worker.

    The source is the stored object of the file version it was made from (never modified);
    the result is a stored object of its own, never shared, so purging the file removes it.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        PROCESSING = "processing"
        READY = "ready"
        FAILED = "failed"

    id = public_id_field("var")
    # No index of its own: every lookup goes through the file (variant_unique starts with it).
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+", db_index=False)
    mode = mode_field()  # its file's
    file = models.ForeignKey(File, on_delete=models.CASCADE, related_name="+", db_index=False)
    version = models.PositiveIntegerField()  # the file version the variant is made from
    source_object = models.ForeignKey(StoredObject, on_delete=models.PROTECT, related_name="+")
    label = models.CharField(max_length=100)
    width = models.PositiveIntegerField(null=True, blank=True)  # as requested
    height = models.PositiveIntegerField(null=True, blank=True)
    fit = models.CharField(max_length=10)
    format = models.CharField(max_length=10)
    quality = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    # The result; set (state pending) just before the bytes are written, live once ready.
    output_object = models.ForeignKey(
        StoredObject, on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    output_width = models.PositiveIntegerField(null=True, blank=True)
    output_height = models.PositiveIntegerField(null=True, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    failure_reason = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Which claim of the variant is current: a worker only finishes the claim it made.
    claim = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = VariantQuerySet.as_manager()

    class Meta:
        constraints = [
            # Identical parameters on one file version are one variant, whatever the race.
            models.UniqueConstraint(fields=["file", "version", "label"], name="variant_unique")
        ]
        indexes = [
            # The listing: a file's variants in id (creation) order.
            models.Index(fields=["file", "id"], name="variant_file_list"),
            # The stale sweep: only unfinished variants, oldest first.
            models.Index(
                fields=["updated_at"],
                name="variant_unfinished",
                condition=Q(status__in=["pending", "processing"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} of {self.file_id} v{self.version} ({self.id})"
