"""Job moves here from files, in Django's state only: its table (files_job), its rows and
its indexes stay as they are (files 0013 drops it from files' state)."""

import django.db.models.deletion
import functools
import storage_service.ids
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("accounts", "0006_merge_0005_apikey_scopes_0005_project_limits"),
        ("files", "0012_usage_deltas"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Job",
                    fields=[
                        (
                            "id",
                            models.CharField(
                                default=functools.partial(
                                    storage_service.ids.new_id, *("job",), **{}
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
                        ("failed_attempts", models.PositiveSmallIntegerField(default=0)),
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
                        "db_table": "files_job",
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
            ],
        ),
    ]
