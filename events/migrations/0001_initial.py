"""Event moves here from webhooks, in Django's state only: its table (webhooks_event), its
rows and its indexes stay as they are (webhooks 0015 drops it from webhooks' state)."""

import django.db.models.deletion
import django.db.models.fields.json
import functools
import storage_service.ids
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("accounts", "0006_merge_0005_apikey_scopes_0005_project_limits"),
        ("webhooks", "0014_drop_delivery_endpoint_waiting"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Event",
                    fields=[
                        (
                            "id",
                            models.CharField(
                                default=functools.partial(
                                    storage_service.ids.new_id, *("evt",), **{}
                                ),
                                editable=False,
                                max_length=30,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        (
                            "mode",
                            models.CharField(
                                choices=[("test", "Test"), ("live", "Live")], max_length=4
                            ),
                        ),
                        (
                            "type",
                            models.CharField(
                                choices=[
                                    ("file.created", "File Created"),
                                    ("file.uploaded", "File Uploaded"),
                                    ("file.downloaded", "File Downloaded"),
                                    ("file.replaced", "File Replaced"),
                                    ("file.copied", "File Copied"),
                                    ("file.renamed", "File Renamed"),
                                    ("file.moved", "File Moved"),
                                    ("file.metadata_updated", "File Metadata Updated"),
                                    ("file.processed", "File Processed"),
                                    ("file.processing_failed", "File Processing Failed"),
                                    ("file.deleted", "File Deleted"),
                                    ("file.restored", "File Restored"),
                                    ("file.purged", "File Purged"),
                                    ("file.expired", "File Expired"),
                                    ("upload.initiated", "Upload Initiated"),
                                    ("upload.completed", "Upload Completed"),
                                    ("upload.aborted", "Upload Aborted"),
                                    ("webhook_endpoint.disabled", "Webhook Endpoint Disabled"),
                                    ("folder.moved", "Folder Moved"),
                                    ("folder.deleted", "Folder Deleted"),
                                    ("folder.restored", "Folder Restored"),
                                ],
                                max_length=40,
                            ),
                        ),
                        ("data", models.JSONField()),
                        ("created_at", models.DateTimeField()),
                        (
                            "project",
                            models.ForeignKey(
                                db_index=False,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="events",
                                to="accounts.project",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "webhooks_event",
                        "indexes": [
                            models.Index(
                                fields=["project", "mode", "-created_at", "-id"],
                                name="event_project_created_id",
                            ),
                            models.Index(
                                fields=["project", "mode", "type", "-created_at", "-id"],
                                name="event_project_type_created",
                            ),
                            models.Index(
                                django.db.models.fields.json.KeyTextTransform("fileId", "data"),
                                name="event_file",
                            ),
                        ],
                    },
                ),
            ],
        ),
    ]
