from __future__ import annotations

from django.db import models
from django.db.models import Q

from accounts.models import Project, mode_field
from accounts.tenancy import Tenant
from storage_service.model_fields import public_id_field


class DeliveryKeyQuerySet(models.QuerySet["DeliveryKey"]):
    def for_tenant(self, tenant: Tenant) -> DeliveryKeyQuerySet:
        """The only way to scope the tenant's own delivery keys (its project and mode): the
        console's keys are not among them, so the API never lists, counts, picks or revokes
        one."""
        return self.filter(project_id=tenant.project_id, mode=tenant.mode, console=False)

    def for_console(self, tenant: Tenant) -> DeliveryKeyQuerySet:
        """The keys the staff console signed the tenant's previews with (delivery/console.py)."""
        return self.filter(project_id=tenant.project_id, mode=tenant.mode, console=True)

    def active(self) -> DeliveryKeyQuerySet:
        return self.filter(revoked_at__isnull=True)


class DeliveryKey(models.Model):
    """A key that signs delivery URLs of one project and mode (delivery/signing.py).

    Its secret is never stored: it is derived from ``salt`` and the service's secret
    (delivery/secret.py), so the database alone does not give anyone a key to sign with,
    while the resolver can still compute it to check a signature.
    """

    id = public_id_field("dk")
    # Indexed by deliverykey_tenant (project, mode, ...).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    mode = mode_field()
    salt = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # The staff console's own key (delivery/console.py), made on first need: the API never
    # lists, counts or revokes it, and what it resolves is not the customer's traffic (it
    # counts against neither the delivery budget nor the bandwidth). Staff revoke it here.
    console = models.BooleanField(default=False, editable=False)

    objects = DeliveryKeyQuerySet.as_manager()

    class Meta:
        indexes = [
            # The tenant's keys newest first (the list, and the newest active key that signs
            # when none is named), and the count of active keys under the cap.
            models.Index(fields=["project", "mode", "-id"], name="deliverykey_tenant"),
            models.Index(
                fields=["project", "mode"],
                name="deliverykey_active",
                condition=Q(revoked_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.mode})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
