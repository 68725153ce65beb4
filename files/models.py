from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q

from accounts.models import Project, mode_field
from accounts.tenancy import Tenant
from storage_service.ids import id_field_length
from storage_service.model_fields import public_id_field


class StoredObject(models.Model):
    """One object in the store. Files and versions point at these; copies share them.

    The storage key is random and never derived from a filename or path, so renames and
    moves never touch the store and keys leak nothing.
    """

    class State(models.TextChoices):
        PENDING = "pending"  # a presigned PUT was issued; bytes may or may not have arrived
        LIVE = "live"  # verified bytes that a file version uses
        DISCARDED = "discarded"  # nothing needs it any more; the purge sweep removes it
        PURGED = "purged"  # removed from the store

    # Only the objects that hold or reserve bytes are indexed by project (storedobject_held):
    # a tenant's usage reads that tenant's entries, never the whole table.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="+", db_index=False)
    mode = mode_field()
    storage_key = models.CharField(max_length=200, unique=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    declared_type = models.CharField(max_length=255)
    declared_size = models.BigIntegerField()
    size = models.BigIntegerField(null=True, blank=True)
    sniffed_type = models.CharField(max_length=255, null=True, blank=True)
    checksum = models.CharField(max_length=100, null=True, blank=True)
    upload_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["state"],
                name="storedobject_discarded",
                condition=Q(state="discarded"),
            ),
            # A tenant's bytes in the store and its pending uploads' reservations, summed
            # from the objects (files/usage.py: recount_usage) as an index-only scan.
            models.Index(
                fields=["project", "mode"],
                include=["state", "size", "declared_size"],
                name="storedobject_held",
                condition=Q(state__in=["pending", "live", "discarded"]),
            ),
        ]

    def __str__(self) -> str:
        return self.storage_key


class UsageDelta(models.Model):
    """What one statement on files_storedobject changed in a tenant's usage (files/usage.py).

    Written only by the triggers of migration 0012 (one row per tenant a statement changed),
    folded into one row per tenant by the fold sweep, rewritten by ``recount_usage``. A
    tenant's usage is the sum of its rows. Rows are only inserted and deleted, never updated,
    and have no foreign key: a writer's insert waits on no lock another transaction holds.
    """

    project_id = models.CharField(max_length=id_field_length("proj"))
    mode = mode_field()
    held_bytes = models.BigIntegerField()  # stored bytes plus pending uploads' declared sizes
    stored_bytes = models.BigIntegerField()  # live and discarded objects' sizes
    stored_objects = models.BigIntegerField()

    class Meta:
        indexes = [
            # A tenant's sums as an index-only scan.
            models.Index(
                fields=["project_id", "mode"],
                include=["held_bytes", "stored_bytes", "stored_objects"],
                name="usagedelta_tenant",
            )
        ]

    def __str__(self) -> str:
        return f"{self.project_id} {self.mode}"


class FileQuerySet(models.QuerySet["File"]):
    def for_tenant(self, tenant: Tenant) -> FileQuerySet:
        """The only way to scope files: the tenant's project and mode, never one of them."""
        return self.filter(project_id=tenant.project_id, mode=tenant.mode)

    def visible(self) -> FileQuerySet:
        return self.exclude(status=File.Status.DELETED)


class File(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        UPLOADED = "uploaded"
        FAILED = "failed"
        DELETED = "deleted"

    id = public_id_field("file")
    # Indexed by every file_list_* index, which all start with (project, mode).
    project = models.ForeignKey(
        Project, on_delete=models.PROTECT, related_name="files", db_index=False
    )
    mode = mode_field()
    filename = models.CharField(max_length=1024)
    path = models.CharField(max_length=4096, null=True, blank=True)
    content_type = models.CharField(max_length=255)
    size = models.BigIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    version = models.PositiveIntegerField(default=1)
    metadata = models.JSONField(null=True, blank=True)
    checksum = models.CharField(max_length=100, null=True, blank=True)
    # The real type sniffed from the stored bytes; later decisions (variants) use it.
    sniffed_type = models.CharField(max_length=255, null=True, blank=True)
    # The object the current version lives in (for a pending file: the one being uploaded).
    current_object = models.ForeignKey(StoredObject, on_delete=models.PROTECT, related_name="+")
    # A replacement whose bytes are being uploaded; the file keeps serving current_object.
    # Indexed by file_replacement_object, only where set.
    replacement_object = models.ForeignKey(
        StoredObject,
        on_delete=models.PROTECT,
        related_name="+",
        null=True,
        blank=True,
        db_index=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    uploaded_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Status before a soft delete, so restore brings the file back as it was.
    status_before_delete = models.CharField(max_length=10, choices=Status.choices, blank=True)
    purged_at = models.DateTimeField(null=True, blank=True)
    # When the expiry sweep deletes the file (as DELETE would); null: never.
    expires_at = models.DateTimeField(null=True, blank=True)
    # The ThumbHash (base64) of the current version's thumbnail, written by the variant
    # worker that made it; null until then, and for files that are not images.
    placeholder = models.CharField(max_length=100, null=True, blank=True)
    # The upload token (``utk_…``) that started the file; null when an API key did. A plain
    # id, not a foreign key: tokens live in uploads, which files does not import.
    upload_token_id = models.CharField(max_length=30, null=True, blank=True)

    objects = FileQuerySet.as_manager()

    class Meta:
        # One index per access path of the listing (see files/selectors.py): every sortBy of
        # the visible listing, the contentType filter, and the trash. The path filter (an
        # exact folder, newest first) and folder prefixes (``path LIKE 'a/%'``) share one
        # index, file_path_prefix (files/migrations: its text_pattern_ops cannot be said
        # here). Each index is written again by every change of a file that is not HOT (a
        # folder move changes path and updated_at), so none is kept that no query needs.
        indexes = [
            models.Index(
                fields=["project", "mode", "-created_at", "-id"],
                name="file_list_created",
                condition=~Q(status="deleted"),
            ),
            models.Index(
                fields=["project", "mode", "-updated_at", "-id"],
                name="file_list_updated",
                condition=~Q(status="deleted"),
            ),
            models.Index(
                fields=["project", "mode", "filename", "id"],
                name="file_list_filename",
                condition=~Q(status="deleted"),
            ),
            models.Index(
                fields=["project", "mode", "size", "id"],
                name="file_list_size",
                condition=~Q(status="deleted"),
            ),
            models.Index(
                fields=["project", "mode", "content_type", "-created_at", "-id"],
                name="file_list_ctype",
                condition=~Q(status="deleted"),
            ),
            models.Index(
                fields=["project", "mode", "status", "-created_at", "-id"], name="file_list_status"
            ),
            # Files whose replacement upload is in flight (a few): the PROTECT check when a
            # stored object goes, and the sweep of expired replacements.
            models.Index(
                fields=["replacement_object"],
                name="file_replacement_object",
                condition=Q(replacement_object__isnull=False),
            ),
            # metadata[<key>]=<value> filters of the listing: containment (@>) of each
            # alternative (the string, the number, the boolean), ANDed across keys; the
            # matches are then sorted (a selective filter leaves few). The recursive listing's
            # path prefix is served by file_path_prefix (migrations 0002, 0005 and 0010).
            GinIndex(
                fields=["metadata"],
                opclasses=["jsonb_path_ops"],
                name="file_metadata",
                condition=~Q(status="deleted"),
            ),
            # The expiry sweep: files not deleted that carry an expiry, soonest first.
            models.Index(
                fields=["expires_at"],
                name="file_expiry_due",
                condition=Q(expires_at__isnull=False) & ~Q(status="deleted"),
            ),
            # The purge sweep: deleted, not yet purged, oldest first.
            models.Index(
                fields=["deleted_at"],
                name="file_purge_due",
                condition=Q(status="deleted", purged_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        # Shown by the admin (titles, breadcrumbs, labels): a client's name, cut short.
        name = self.filename if len(self.filename) <= 60 else self.filename[:59] + "…"
        return f"{name} ({self.id})"


class FileVersion(models.Model):
    """Every version a file has published; previous versions keep their stored objects."""

    # Indexed by fileversion_unique (file, version).
    file = models.ForeignKey(
        File, on_delete=models.CASCADE, related_name="versions", db_index=False
    )
    version = models.PositiveIntegerField()
    stored_object = models.ForeignKey(
        StoredObject, on_delete=models.PROTECT, related_name="versions"
    )
    content_type = models.CharField(max_length=255)
    size = models.BigIntegerField()
    checksum = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["file", "version"], name="fileversion_unique")
        ]

    def __str__(self) -> str:
        return f"{self.file_id} v{self.version}"


class IdempotencyRecord(models.Model):
    """The first answer to a request carrying an Idempotency-Key (an upload's creation, a
    batch), replayed on retry."""

    # Indexed by idempotency_unique (project, mode, key).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    mode = mode_field()
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    # The file an upload created; null for a batch, whose answer is all that is replayed.
    file = models.ForeignKey(
        File, on_delete=models.CASCADE, related_name="+", db_index=False, null=True
    )
    response_body = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "mode", "key"], name="idempotency_unique")
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]

    def __str__(self) -> str:
        return self.key
