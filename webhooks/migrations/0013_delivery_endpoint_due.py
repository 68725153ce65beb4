from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # CONCURRENTLY: deliveries are written all the time; building must not block them.
    atomic = False

    dependencies = [
        ("webhooks", "0012_merge_events_api_event_types"),
    ]

    operations = [
        # Built before the old one goes, so the sweep always has an index to read.
        AddIndexConcurrently(
            model_name="delivery",
            index=models.Index(
                condition=models.Q(("status", "PENDING")),
                fields=["endpoint", "next_attempt_at"],
                name="delivery_endpoint_due",
            ),
        ),
        RemoveIndexConcurrently(model_name="delivery", name="delivery_pending_due"),
    ]
