from django.db import migrations

from storage_service.migration_ops import drop_like_indexes


class Migration(migrations.Migration):
    """The ``_like`` indexes Django makes for 0003's keys (created at the end of a migration,
    so dropped in this one): ids are only compared for equality."""

    dependencies = [("webhooks", "0003_endpoints_deliveries")]

    operations = [drop_like_indexes("webhooks_endpoint", "webhooks_delivery")]
