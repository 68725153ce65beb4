from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # CONCURRENTLY: building the index on a large table must not block uploads meanwhile.
    atomic = False

    dependencies = [
        ("files", "0005_tenancy_mode"),
    ]

    operations = [
        # Built before the old one goes, so usage always has an index to read.
        AddIndexConcurrently(
            model_name="storedobject",
            index=models.Index(
                condition=models.Q(("state__in", ["pending", "live", "discarded"])),
                fields=["project", "mode"],
                include=("state", "size", "declared_size"),
                name="storedobject_held",
            ),
        ),
        RemoveIndexConcurrently(model_name="storedobject", name="storedobject_live_project"),
    ]
