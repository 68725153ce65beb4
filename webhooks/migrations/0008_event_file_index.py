import django.db.models.fields.json
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # CONCURRENTLY: the events table is the largest; building the index must not block the
    # API's writes (every change records an event) meanwhile.
    atomic = False

    dependencies = [
        ("webhooks", "0007_endpoint_disable"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="event",
            index=models.Index(
                django.db.models.fields.json.KeyTextTransform("fileId", "data"), name="event_file"
            ),
        ),
    ]
