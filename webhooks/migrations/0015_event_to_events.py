"""Event has moved to the events app (events 0001), in Django's state only: the table
webhooks_event, its rows, and the foreign key of webhooks_delivery to it stay as they are.

The event's content type follows it (``webhooks.event`` becomes ``events.event``), so its
permissions and the admin's log entries stay attached to it.
"""

from collections.abc import Callable

import django.db.models.deletion
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def content_type_to(
    app_label: str, from_label: str
) -> Callable[[StateApps, BaseDatabaseSchemaEditor], None]:
    def move(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        ContentType = apps.get_model("contenttypes", "ContentType")
        types = ContentType.objects.db_manager(schema_editor.connection.alias)
        # A database where the new one exists already (made by a post_migrate run): leave both.
        if not types.filter(app_label=app_label, model="event").exists():
            types.filter(app_label=from_label, model="event").update(app_label=app_label)
        types.clear_cache()  # as Django's own content type renames do

    return move


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("events", "0001_initial"),
        ("webhooks", "0014_drop_delivery_endpoint_waiting"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="delivery",
                    name="event",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="deliveries",
                        to="events.event",
                    ),
                ),
                migrations.DeleteModel(name="Event"),
            ],
        ),
        migrations.RunPython(
            content_type_to("events", "webhooks"), content_type_to("webhooks", "events")
        ),
    ]
