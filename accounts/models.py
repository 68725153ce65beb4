from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from storage_service.model_fields import public_id_field


class Organization(models.Model):
    id = public_id_field("org")
    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Project(models.Model):
    id = public_id_field("proj")
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="projects"
    )
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    # Who of the staff (not superusers) may see the project in the console: these users, and
    # the members of these groups (accounts/staffaccess.py). Superusers see every project.
    staff_users = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="granted_projects",
        verbose_name="staff users granted",
        help_text="Staff users (not superusers) who see this project in the console.",
    )
    staff_groups = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="granted_projects",
        verbose_name="staff groups granted",
        help_text="Groups whose staff members see this project in the console.",
    )

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiKey(models.Model):
    class Environment(models.TextChoices):
        TEST = "test"
        LIVE = "live"

    id = public_id_field("key")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    environment = models.CharField(max_length=4, choices=Environment.choices)
    # Only a keyed hash is stored: a leaked database does not leak usable keys, and the HMAC
    # secret (outside the database) is needed to test guesses offline.
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    # Enough of the key to recognise it in a list ("sk_test_4fJ2…"), never enough to use it.
    prefix = models.CharField(max_length=24, editable=False)
    name = models.CharField(max_length=200, blank=True)
    # A restricted key's scopes (accounts/scopes.py), fixed at issue so a key can never widen
    # itself; null for a full key, which holds every scope, later ones included.
    scopes = ArrayField(models.CharField(max_length=32), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.environment})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


def mode_field() -> models.CharField[str, str]:
    """The mode (test or live) of a tenant-owned row: the environment of the key that made it.

    No default: every row is made in the mode of its tenant (accounts.tenancy.Tenant.owner),
    so a forgotten mode fails loudly instead of landing in live.
    """
    return models.CharField(max_length=4, choices=ApiKey.Environment.choices)


class BandwidthUsage(models.Model):
    """Bytes of download URLs issued, per project per UTC day (files and variants alike).

    Counted when a URL is issued (the service never sees the GET itself): one upsert per URL,
    ``bytes = bytes + size``, so concurrent downloads never lose a count.
    """

    # Indexed by bandwidth_unique (project, mode, day).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="bandwidth", db_index=False
    )
    mode = mode_field()
    day = models.DateField()
    bytes = models.BigIntegerField(default=0)
    downloads = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "mode", "day"], name="bandwidth_unique")
        ]
        verbose_name = "bandwidth usage"
        verbose_name_plural = "bandwidth usage"

    def __str__(self) -> str:
        return f"{self.project_id} {self.day}: {self.bytes} bytes"


class BandwidthFold(models.Model):
    """A fold of the bandwidth counted in Redis that has been added to ``BandwidthUsage``.

    Written in the transaction that adds the fold's counts (accounts/bandwidth.py), so a fold
    whose Redis hash outlives that commit (the fold died, or Redis failed, before deleting it)
    is known to be spent and never added twice. A row goes once its hash is gone from Redis.
    """

    # The fold's id, which also names its hash in Redis; unique, so two folds that both take
    # the same hash cannot both commit it.
    id = models.UUIDField(primary_key=True)
    folded_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"fold {self.id}"


class ProjectLimits(models.Model):
    """What staff allow one project in one mode; a missing row or an empty field is no limit.

    The row is also the lock a limited tenant's uploads take while they reserve storage
    (files/services/limits.py), so racing uploads cannot both fit in the same room.
    """

    # Indexed by projectlimits_unique (project, mode).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="limits", db_index=False
    )
    mode = mode_field()
    max_storage_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes the store may hold for this mode; empty: no limit."
    )
    max_file_size_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Largest declared size of one file; empty: no limit."
    )
    allowed_content_types = ArrayField(
        models.CharField(max_length=255),
        null=True,
        blank=True,
        help_text="Comma-separated MIME types, exact or 'type/*'; empty: any type.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "mode"], name="projectlimits_unique")
        ]
        verbose_name = "project limits"
        verbose_name_plural = "project limits"

    def __str__(self) -> str:
        return f"{self.project_id} ({self.mode})"


class UsageSnapshot(models.Model):
    """A tenant's stored bytes and files as they stood on one UTC day (the last count that
    day): the history the staff console's 30-day chart draws. Written by the hourly sweep
    (accounts.tasks.snapshot_usage) and whenever staff open the project's page; nothing else
    reads it, and a missing day is drawn as the day before it."""

    # Indexed by usagesnapshot_unique (project, mode, day).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="usage_snapshots", db_index=False
    )
    mode = mode_field()
    day = models.DateField()
    storage_bytes = models.BigIntegerField()
    files = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "mode", "day"], name="usagesnapshot_unique")
        ]

    def __str__(self) -> str:
        return f"{self.project_id} {self.mode} {self.day}"
