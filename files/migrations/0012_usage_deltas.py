"""A tenant's usage as the sum of its files_usagedelta rows, written by statement-level
triggers on files_storedobject, so the storage quota and GET /v1/usage read a few rows
instead of summing every object of the tenant.

Each statement that inserts, updates or deletes stored objects inserts one row per tenant
whose usage it changed (transition tables, GROUP BY tenant): only an insert, into a table
with no foreign key, so no writer ever waits on a lock another writer holds.

The baseline (one row per tenant with its totals) is inserted after the triggers exist, in
this migration's transaction, with files_storedobject locked against writes
(SHARE ROW EXCLUSIVE) from before the triggers until the commit: a write either committed
before the lock (in the baseline) or waits and is counted by the triggers, never both.
"""

from django.db import migrations, models

# What one object row adds to its tenant's usage; files/usage.py documents the rules.
_HELD = (
    "CASE WHEN state = 'pending' THEN declared_size"
    " WHEN state IN ('live', 'discarded') THEN coalesce(size, 0) ELSE 0 END"
)
_STORED = "CASE WHEN state IN ('live', 'discarded') AND size IS NOT NULL THEN size ELSE 0 END"
_OBJECTS = "CASE WHEN state IN ('live', 'discarded') AND size IS NOT NULL THEN 1 ELSE 0 END"


def _rows(table: str, sign: str) -> str:
    return (
        f"SELECT project_id, mode, {sign}({_HELD}), {sign}({_STORED}), {sign}({_OBJECTS})"
        f" FROM {table}"
    )


def _insert(changes: str) -> str:
    return f"""
    INSERT INTO files_usagedelta (project_id, mode, held_bytes, stored_bytes, stored_objects)
    SELECT project_id, mode, sum(held), sum(stored), sum(objects)
    FROM ({changes}) AS changed (project_id, mode, held, stored, objects)
    GROUP BY project_id, mode
    HAVING sum(held) <> 0 OR sum(stored) <> 0 OR sum(objects) <> 0;
"""


_TRIGGERS = [
    # (event, transition tables, function, the changed rows with their signs)
    ("INSERT", "NEW TABLE AS new_rows", "files_usage_inserted", _rows("new_rows", "")),
    (
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "files_usage_updated",
        f"{_rows('new_rows', '')} UNION ALL {_rows('old_rows', '-')}",
    ),
    ("DELETE", "OLD TABLE AS old_rows", "files_usage_deleted", _rows("old_rows", "-")),
]

_CREATE = (
    # Writers wait from here to the commit; see the module's docstring.
    "LOCK TABLE files_storedobject IN SHARE ROW EXCLUSIVE MODE;\n"
    # Small and churned by the fold sweep: vacuum it often, so its index-only scans stay so.
    "ALTER TABLE files_usagedelta SET (autovacuum_vacuum_scale_factor = 0.01,"
    " autovacuum_vacuum_insert_scale_factor = 0.01);\n"
    + "".join(
        f"CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN{_insert(changes)}    RETURN NULL;\nEND\n$$;\n"
        f"CREATE TRIGGER {function} AFTER {event} ON files_storedobject"
        f" REFERENCING {referencing} FOR EACH STATEMENT EXECUTE FUNCTION {function}();\n"
        for event, referencing, function, changes in _TRIGGERS
    )
    # The baseline: only the objects that hold bytes (the storedobject_held index).
    + _insert(_rows("files_storedobject", "") + " WHERE state IN ('pending', 'live', 'discarded')")
)

_DROP = "".join(
    f"DROP TRIGGER {function} ON files_storedobject;\nDROP FUNCTION {function}();\n"
    for _, _, function, _ in _TRIGGERS
)


class Migration(migrations.Migration):
    dependencies = [
        ("files", "0011_job_failed_attempts"),
    ]

    operations = [
        migrations.CreateModel(
            name="UsageDelta",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("project_id", models.CharField(max_length=31)),
                (
                    "mode",
                    models.CharField(choices=[("test", "Test"), ("live", "Live")], max_length=4),
                ),
                ("held_bytes", models.BigIntegerField()),
                ("stored_bytes", models.BigIntegerField()),
                ("stored_objects", models.BigIntegerField()),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["project_id", "mode"],
                        include=("held_bytes", "stored_bytes", "stored_objects"),
                        name="usagedelta_tenant",
                    )
                ],
            },
        ),
        migrations.RunSQL(_CREATE, reverse_sql=_DROP),
    ]
