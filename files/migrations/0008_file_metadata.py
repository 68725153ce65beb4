import django.contrib.postgres.indexes
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # CONCURRENTLY: building the index on a large table must not block uploads meanwhile.
    atomic = False

    dependencies = [
        ("files", "0007_expiry"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="file",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("status", "deleted"), _negated=True),
                fields=["metadata"],
                name="file_metadata",
                opclasses=["jsonb_path_ops"],
            ),
        ),
    ]
