"""Test and live are separate data: a mode on every tenant-owned row, existing rows live,
and the indexes that lead with the project lead with (project, mode)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("uploads", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="uploadsession",
            name="mode",
            field=models.CharField(
                choices=[("test", "Test"), ("live", "Live")], default="live", max_length=4
            ),
            # Existing rows were made before test and live were separated: they are live.
            preserve_default=False,
        ),
    ]
