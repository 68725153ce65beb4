from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from accounts.models import Project, mode_field
from accounts.tenancy import Tenant
from events.models import Event
from storage_service.model_fields import public_id_field


class EndpointQuerySet(models.QuerySet["Endpoint"]):
    def for_tenant(self, tenant: Tenant) -> EndpointQuerySet:
        return self.filter(project_id=tenant.project_id, mode=tenant.mode)


class Endpoint(models.Model):
    """A URL of the project that receives the events it subscribes to, signed with its secret."""

    class Status(models.TextChoices):
        ACTIVE = "ACTIVE"
        # Nothing is sent to it (new events make no delivery for it) until it is re-enabled.
        DISABLED = "DISABLED"

    class DisabledReason(models.TextChoices):
        GONE = "GONE", "Answered 410 Gone"
        FAILING = "FAILING", "Every attempt failed for days"  # see the setting

    id = public_id_field("wh")
    # Indexed by endpoint_project_created (project, mode, -created_at).
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="webhook_endpoints", db_index=False
    )
    # Receives only events of its own mode.
    mode = mode_field()
    url = models.CharField(max_length=2048)
    # Null means every event type, including types added later.
    events = ArrayField(models.CharField(max_length=40), null=True)
    # Kept in clear: every delivery signs with it. Shown once, at registration or rotation.
    secret = models.CharField(max_length=80)
    # The secret a rotation replaced, which signs every delivery beside the new one until
    # previous_secret_expires_at (the database's clock decides); null outside an overlap.
    previous_secret = models.CharField(max_length=80, null=True)
    previous_secret_expires_at = models.DateTimeField(null=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(default=timezone.now)
    # The first failed attempt since the last success (null while the last attempt succeeded):
    # when it is older than SERVICE_WEBHOOK_DISABLE_AFTER_SECONDS, the endpoint is disabled.
    failing_since = models.DateTimeField(null=True)
    disabled_at = models.DateTimeField(null=True)
    disabled_reason = models.CharField(max_length=10, choices=DisabledReason.choices, null=True)

    objects = EndpointQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["project", "mode", "-created_at"], name="endpoint_project_created")
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.url}"


class Delivery(models.Model):
    """One event for one endpoint: its status, attempts and the time of its next attempt.

    The next attempt's time lives here, not only in a Celery message, so the sweep can send
    any due delivery whose message was lost. ``leased_until`` marks an attempt in flight: no
    other worker claims the row until the attempt ends or the lease runs out (a dead worker).
    """

    class Status(models.TextChoices):
        PENDING = "PENDING"
        DELIVERED = "DELIVERED"
        FAILED = "FAILED"

    id = public_id_field("dl")
    # Indexed by delivery_endpoint_id (endpoint, -id): ids are time-ordered, newest first.
    endpoint = models.ForeignKey(
        Endpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_status = models.IntegerField(null=True)
    last_error = models.TextField(null=True)
    delivered_at = models.DateTimeField(null=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Null once the delivery is DELIVERED or FAILED.
    next_attempt_at = models.DateTimeField(null=True)
    leased_until = models.DateTimeField(null=True)

    class Meta:
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["endpoint", "-id"], name="delivery_endpoint_id"),
            # Each endpoint's pending rows by due time: a project's drain step and the
            # sweep's fair page read the oldest few of each endpoint (webhooks/delivery.py);
            # a replay counts the endpoint's rows still waiting for a first attempt here.
            models.Index(
                fields=["endpoint", "next_attempt_at"],
                name="delivery_endpoint_due",
                condition=models.Q(status="PENDING"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.status}"


class Replay(models.Model):
    """A replay of an endpoint's events in a window, made in bounded batches.

    ``POST /v1/webhooks/<id>/replay`` counts the events and makes the first batch of
    deliveries; a task makes each next batch once the endpoint's earlier ones have had their
    first attempt, so a replay of a million events holds at most a batch of rows waiting, and
    the per-project delivery caps pace it like live traffic. ``after_created_at`` and
    ``after_event_id`` are where the next batch starts (keyset on the event's time and id).
    """

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="replays")
    since = models.DateTimeField()
    until = models.DateTimeField()
    # The event types it replays (the endpoint's subscription when asked); null: every type.
    types = ArrayField(models.CharField(max_length=40), null=True)
    total = models.PositiveIntegerField()  # the events counted when it was asked
    made = models.PositiveIntegerField(default=0)
    after_created_at = models.DateTimeField(null=True)
    after_event_id = models.CharField(max_length=40, default="")
    created_at = models.DateTimeField(default=timezone.now)
    # When a step last ran (the database's clock): a step finding another one ran less than
    # half a poll interval ago ends its chain of messages, and the sweep resumes a replay
    # whose steps stopped (a lost message).
    stepped_at = models.DateTimeField(null=True)
    finished_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            # The sweep's scan for replays whose next message was lost.
            models.Index(
                fields=["created_at"],
                name="replay_unfinished",
                condition=models.Q(finished_at__isnull=True),
            )
        ]

    def __str__(self) -> str:
        return f"replay of {self.endpoint_id} ({self.made}/{self.total})"
