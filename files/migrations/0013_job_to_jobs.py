"""Job has moved to the jobs app (jobs 0001), in Django's state only: the table files_job and
its rows stay as they are.

The job's content type follows it (``files.job`` becomes ``jobs.job``), so its permissions
and the admin's log entries stay attached to it.
"""

from collections.abc import Callable

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def content_type_to(
    app_label: str, from_label: str
) -> Callable[[StateApps, BaseDatabaseSchemaEditor], None]:
    def move(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        ContentType = apps.get_model("contenttypes", "ContentType")
        types = ContentType.objects.db_manager(schema_editor.connection.alias)
        # A database where the new one exists already (made by a post_migrate run): leave both.
        if not types.filter(app_label=app_label, model="job").exists():
            types.filter(app_label=from_label, model="job").update(app_label=app_label)
        types.clear_cache()  # as Django's own content type renames do

    return move


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("files", "0012_usage_deltas"),
        ("jobs", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[migrations.DeleteModel(name="Job")],
        ),
        migrations.RunPython(content_type_to("jobs", "files"), content_type_to("files", "jobs")),
    ]
