"""Test and live are separate data: a mode on every tenant-owned row, existing rows live,
and the indexes that lead with the project lead with (project, mode)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0003_bandwidthusage"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="bandwidthusage",
            name="bandwidth_unique",
        ),
        migrations.AddField(
            model_name="bandwidthusage",
            name="mode",
            field=models.CharField(
                choices=[("test", "Test"), ("live", "Live")], default="live", max_length=4
            ),
            # Existing rows were made before test and live were separated: they are live.
            preserve_default=False,
        ),
        migrations.AddConstraint(
            model_name="bandwidthusage",
            constraint=models.UniqueConstraint(
                fields=("project", "mode", "day"), name="bandwidth_unique"
            ),
        ),
    ]
