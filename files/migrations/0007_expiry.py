from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # CONCURRENTLY: building the index on a large table must not block uploads meanwhile.
    atomic = False

    dependencies = [
        ("files", "0006_storedobject_held"),
    ]

    operations = [
        migrations.AddField(
            model_name="file",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        AddIndexConcurrently(
            model_name="file",
            index=models.Index(
                condition=models.Q(("expires_at__isnull", False))
                & models.Q(("status", "deleted"), _negated=True),
                fields=["expires_at"],
                name="file_expiry_due",
            ),
        ),
    ]
