"""Indexes that plain model Meta cannot express.

- A trigram GIN index on UPPER(filename) for ``search`` (Django's icontains compares
  UPPER(filename) LIKE UPPER('%term%')), created only where the pg_trgm extension is
  available: without it, search still works, by scanning.
- A text_pattern_ops index on (project, path) for folder prefix matches (``path LIKE 'a/b/%'``).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations


def create_trigram_index(apps: Any, schema_editor: Any) -> None:
    cursor = schema_editor.connection.cursor()
    cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
    if cursor.fetchone() is None:
        return
    try:
        cursor.execute("SAVEPOINT trgm")
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        cursor.execute("RELEASE SAVEPOINT trgm")
    except Exception:
        # Available but not ours to create (no privilege): search falls back to a scan.
        cursor.execute("ROLLBACK TO SAVEPOINT trgm")
        return
    cursor.execute(
        "CREATE INDEX IF NOT EXISTS file_filename_trgm ON files_file "
        "USING gin (UPPER(filename) gin_trgm_ops) WHERE status <> 'deleted'"
    )


def drop_trigram_index(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute("DROP INDEX IF EXISTS file_filename_trgm")


class Migration(migrations.Migration):
    dependencies = [("files", "0001_initial")]

    operations = [
        migrations.RunPython(create_trigram_index, drop_trigram_index),
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS file_path_prefix ON files_file "
            "(project_id, path text_pattern_ops) WHERE status <> 'deleted'",
            "DROP INDEX IF EXISTS file_path_prefix",
        ),
    ]
