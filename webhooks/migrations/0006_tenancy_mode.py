"""Test and live are separate data: a mode on every tenant-owned row, existing rows live,
and the indexes that lead with the project lead with (project, mode)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_tenancy_mode"),
        ("webhooks", "0005_delivery_plural"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="endpoint",
            name="endpoint_project_created",
        ),
        migrations.RemoveIndex(
            model_name="event",
            name="event_project_created",
        ),
        migrations.AddField(
            model_name="endpoint",
            name="mode",
            field=models.CharField(
                choices=[("test", "Test"), ("live", "Live")], default="live", max_length=4
            ),
            # Existing rows were made before test and live were separated: they are live.
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="event",
            name="mode",
            field=models.CharField(
                choices=[("test", "Test"), ("live", "Live")], default="live", max_length=4
            ),
            # Existing rows were made before test and live were separated: they are live.
            preserve_default=False,
        ),
        migrations.AddIndex(
            model_name="endpoint",
            index=models.Index(
                fields=["project", "mode", "-created_at"], name="endpoint_project_created"
            ),
        ),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(
                fields=["project", "mode", "-created_at"], name="event_project_created"
            ),
        ),
    ]
