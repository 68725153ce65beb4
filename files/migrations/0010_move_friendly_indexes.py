"""Fewer indexes on files_file: each is written again by every change that is not HOT (a
folder move writes every index of each of its files).

- The path filter's index (project, mode, path, -created_at, -id) and the folder prefix
  index (project, mode, path text_pattern_ops) become one, file_path_prefix, with
  (created_at DESC, id DESC) after the path: text_pattern_ops answers ``path = %s`` as well
  as ``path LIKE 'a/%'``, and no query orders by path itself.
- The replacement object's foreign key index holds only the files that have one.

Each new index is built (CONCURRENTLY) before the one it replaces goes.
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

_NEW_PREFIX = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON files_file "
    "(project_id, mode, path text_pattern_ops, created_at DESC, id DESC) "
    "WHERE status <> 'deleted'"
)
_OLD_PREFIX = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON files_file "
    "(project_id, mode, path text_pattern_ops) WHERE status <> 'deleted'"
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("files", "0009_merge_0006_jobs_0008_file_metadata"),
    ]

    operations = [
        migrations.RunSQL(
            _NEW_PREFIX.format(name="file_path_prefix_next"),
            "DROP INDEX CONCURRENTLY IF EXISTS file_path_prefix_next",
        ),
        migrations.RunSQL(
            "DROP INDEX CONCURRENTLY IF EXISTS file_path_prefix",
            _OLD_PREFIX.format(name="file_path_prefix"),
        ),
        migrations.RunSQL(
            "ALTER INDEX file_path_prefix_next RENAME TO file_path_prefix",
            "ALTER INDEX file_path_prefix RENAME TO file_path_prefix_next",
        ),
        RemoveIndexConcurrently(model_name="file", name="file_list_path"),
        AddIndexConcurrently(
            model_name="file",
            index=models.Index(
                condition=models.Q(("replacement_object__isnull", False)),
                fields=["replacement_object"],
                name="file_replacement_object",
            ),
        ),
        migrations.AlterField(
            model_name="file",
            name="replacement_object",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=models.deletion.PROTECT,
                related_name="+",
                to="files.storedobject",
            ),
        ),
    ]
