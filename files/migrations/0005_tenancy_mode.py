"""Test and live are separate data: a mode on every tenant-owned row, existing rows live,
and the indexes that lead with the project lead with (project, mode)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_tenancy_mode"),
        ("files", "0004_live_objects_by_project"),
    ]

    operations = [
        # The folder prefix index (0002) leads with (project, mode) like the others.
        migrations.RunSQL(
            "DROP INDEX IF EXISTS file_path_prefix",
            "CREATE INDEX IF NOT EXISTS file_path_prefix ON files_file "
            "(project_id, path text_pattern_ops) WHERE status <> 'deleted'",
        ),
        migrations.RemoveConstraint(
            model_name="idempotencyrecord",
            name="idempotency_unique",
        ),
        migrations.RemoveIndex(
            model_name="file",
            name="file_list_created",
        ),
        migrations.RemoveIndex(
            model_name="file",
            name="file_list_updated",
        ),
        migrations.RemoveIndex(
            model_name="file",
            name="file_list_filename",
        ),
        migrations.RemoveIndex(
            model_name="file",
            name="file_list_size",
        ),
        migrations.RemoveIndex(
            model_name="file",
            name="file_list_path",
        ),
        migrations.RemoveIndex(
            model_name="file",
            name="file_list_ctype",
        ),
        migrations.RemoveIndex(
            model_name="file",
            name="file_list_status",
        ),
        migrations.RemoveIndex(
            model_name="storedobject",
            name="storedobject_live_project",
        ),
        migrations.AddField(
            model_name="file",
            name="mode",
            field=models.CharField(
                choices=[("test", "Test"), ("live", "Live")], default="live", max_length=4
            ),
            # Existing rows were made before test and live were separated: they are live.
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="idempotencyrecord",
            name="mode",
            field=models.CharField(
                choices=[("test", "Test"), ("live", "Live")], default="live", max_length=4
            ),
            # Existing rows were made before test and live were separated: they are live.
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="storedobject",
            name="mode",
            field=models.CharField(
                choices=[("test", "Test"), ("live", "Live")], default="live", max_length=4
            ),
            # Existing rows were made before test and live were separated: they are live.
            preserve_default=False,
        ),
        migrations.AddIndex(
            model_name="file",
            index=models.Index(
                condition=models.Q(("status", "deleted"), _negated=True),
                fields=["project", "mode", "-created_at", "-id"],
                name="file_list_created",
            ),
        ),
        migrations.AddIndex(
            model_name="file",
            index=models.Index(
                condition=models.Q(("status", "deleted"), _negated=True),
                fields=["project", "mode", "-updated_at", "-id"],
                name="file_list_updated",
            ),
        ),
        migrations.AddIndex(
            model_name="file",
            index=models.Index(
                condition=models.Q(("status", "deleted"), _negated=True),
                fields=["project", "mode", "filename", "id"],
                name="file_list_filename",
            ),
        ),
        migrations.AddIndex(
            model_name="file",
            index=models.Index(
                condition=models.Q(("status", "deleted"), _negated=True),
                fields=["project", "mode", "size", "id"],
                name="file_list_size",
            ),
        ),
        migrations.AddIndex(
            model_name="file",
            index=models.Index(
                condition=models.Q(("status", "deleted"), _negated=True),
                fields=["project", "mode", "path", "-created_at", "-id"],
                name="file_list_path",
            ),
        ),
        migrations.AddIndex(
            model_name="file",
            index=models.Index(
                condition=models.Q(("status", "deleted"), _negated=True),
                fields=["project", "mode", "content_type", "-created_at", "-id"],
                name="file_list_ctype",
            ),
        ),
        migrations.AddIndex(
            model_name="file",
            index=models.Index(
                fields=["project", "mode", "status", "-created_at", "-id"], name="file_list_status"
            ),
        ),
        migrations.AddIndex(
            model_name="storedobject",
            index=models.Index(
                condition=models.Q(("state", "live")),
                fields=["project", "mode"],
                include=("size",),
                name="storedobject_live_project",
            ),
        ),
        migrations.AddConstraint(
            model_name="idempotencyrecord",
            constraint=models.UniqueConstraint(
                fields=("project", "mode", "key"), name="idempotency_unique"
            ),
        ),
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS file_path_prefix ON files_file "
            "(project_id, mode, path text_pattern_ops) WHERE status <> 'deleted'",
            "DROP INDEX IF EXISTS file_path_prefix",
        ),
    ]
