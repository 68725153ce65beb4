"""Jobs (folder operations) and what they read: the trash by folder (a folder restore)."""

import django.db.models.deletion
import functools
import storage_service.ids
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_tenancy_mode"),
        ("files", "0005_tenancy_mode"),
    ]

    operations = [
        migrations.AlterField(
            model_name="idempotencyrecord",
            name="file",
            field=models.ForeignKey(
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="files.file",
            ),
        ),
        migrations.CreateModel(
            name="Job",
            fields=[
                (
                    "id",
                    models.CharField(
                        default=functools.partial(storage_service.ids.new_id, *("job",), **{}),
                        editable=False,
                        max_length=30,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                (
                    "mode",
                    models.CharField(choices=[("test", "Test"), ("live", "Live")], max_length=4),
                ),
                (
                    "type",
                    models.CharField(
                        choices=[
                            ("folder.move", "Folder Move"),
                            ("folder.delete", "Folder Delete"),
                            ("folder.restore", "Folder Restore"),
                        ],
                        max_length=20,
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("running", "Running"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                        ],
                        default="pending",
                        max_length=10,
                    ),
                ),
                ("params", models.JSONField()),
                ("files_total", models.IntegerField(blank=True, null=True)),
                ("files_done", models.IntegerField(default=0)),
                ("error", models.JSONField(blank=True, null=True)),
                ("cursor", models.CharField(blank=True, max_length=40, null=True)),
                ("lease_token", models.CharField(blank=True, max_length=32)),
                ("leased_until", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "project",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="accounts.project",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["project", "mode", "-id"], name="job_project_id"),
                    models.Index(
                        condition=models.Q(("status__in", ["pending", "running"])),
                        fields=["project", "mode"],
                        name="job_active",
                    ),
                ],
            },
        ),
        # A folder restore reads the deleted files at or below a path, as file_path_prefix
        # serves the other folder operations for the files that are not deleted.
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS file_trash_path_prefix ON files_file "
            "(project_id, mode, path text_pattern_ops) WHERE status = 'deleted'",
            "DROP INDEX IF EXISTS file_trash_path_prefix",
        ),
    ]
