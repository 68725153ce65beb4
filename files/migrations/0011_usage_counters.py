"""Per-tenant usage counters (files_usagecounter), kept by statement-level triggers.

Each change of a stored object (insert, a change of state, size, declared size or tenant,
delete) or of a file's status adds its difference to the counters of its tenant, in the same
transaction, whichever code path or raw SQL makes it. A transaction adds to the slot of its
backend (pg_backend_pid() % 16), so concurrent transactions of one tenant rarely wait for
each other's counter row. The counters start from the rows as they are: creating the
triggers locks both tables against writes until this migration commits, so no change falls
between the backfill and the first trigger.
"""

import django.db.models.deletion
from django.db import migrations, models


# What the rows a statement changed add to their tenants' counters, one upsert per tenant: an
# object adds its size when the store holds it (live or discarded, size known), its declared
# size while it is pending; a file adds one while it is uploaded (files/usage.py counts the
# same). Statement-level, so a statement of a million rows writes each counter row once: a
# row updated once per changed row in one transaction grows a chain of versions that every
# next update walks. Tenants in order, so that two statements lock their rows in one order.
_COUNT = """
    INSERT INTO files_usagecounter
        (project_id, mode, slot, stored_bytes, stored_objects, pending_bytes, uploaded_files)
    SELECT project_id, mode, pg_backend_pid() % 16, sum(b), sum(o), sum(p), sum(f)
    FROM ({changes}) AS changed (project_id, mode, b, o, p, f)
    GROUP BY project_id, mode
    HAVING sum(b) <> 0 OR sum(o) <> 0 OR sum(p) <> 0 OR sum(f) <> 0
    ORDER BY project_id, mode
    ON CONFLICT (project_id, mode, slot) DO UPDATE SET
        stored_bytes = files_usagecounter.stored_bytes + EXCLUDED.stored_bytes,
        stored_objects = files_usagecounter.stored_objects + EXCLUDED.stored_objects,
        pending_bytes = files_usagecounter.pending_bytes + EXCLUDED.pending_bytes,
        uploaded_files = files_usagecounter.uploaded_files + EXCLUDED.uploaded_files;
"""


def _object(rows: str, sign: str) -> str:
    return (
        f"SELECT project_id, mode,"
        f" {sign}CASE WHEN state IN ('live', 'discarded') AND size IS NOT NULL"
        f" THEN size ELSE 0 END,"
        f" {sign}CASE WHEN state IN ('live', 'discarded') AND size IS NOT NULL"
        f" THEN 1 ELSE 0 END,"
        f" {sign}CASE WHEN state = 'pending' THEN declared_size ELSE 0 END,"
        f" 0 FROM {rows}"
    )


def _file(rows: str, sign: str) -> str:
    return f"SELECT project_id, mode, 0, 0, 0, {sign}1 FROM {rows} WHERE status = 'uploaded'"


def _function(name: str, changes: str) -> str:
    body = _COUNT.format(changes=changes)
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{body}    RETURN NULL;\nEND\n$$;\n"
    )


def _trigger(table: str, event: str, referencing: str, function: str) -> str:
    return (
        f"CREATE TRIGGER {function} AFTER {event} ON {table}"
        f" REFERENCING {referencing} FOR EACH STATEMENT EXECUTE FUNCTION {function}();\n"
    )


_TRIGGERS = [
    # (table, event, transition tables, function, what the changed rows add)
    (
        "files_storedobject",
        "INSERT",
        "NEW TABLE AS new_rows",
        "files_usage_objects_inserted",
        _object("new_rows", ""),
    ),
    (
        "files_storedobject",
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "files_usage_objects_updated",
        f"{_object('new_rows', '')} UNION ALL {_object('old_rows', '-')}",
    ),
    (
        "files_storedobject",
        "DELETE",
        "OLD TABLE AS old_rows",
        "files_usage_objects_deleted",
        _object("old_rows", "-"),
    ),
    (
        "files_file",
        "INSERT",
        "NEW TABLE AS new_rows",
        "files_usage_files_inserted",
        _file("new_rows", ""),
    ),
    (
        "files_file",
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        "files_usage_files_updated",
        f"{_file('new_rows', '')} UNION ALL {_file('old_rows', '-')}",
    ),
    (
        "files_file",
        "DELETE",
        "OLD TABLE AS old_rows",
        "files_usage_files_deleted",
        _file("old_rows", "-"),
    ),
]

_BACKFILL = """
INSERT INTO files_usagecounter
    (project_id, mode, slot, stored_bytes, stored_objects, pending_bytes, uploaded_files)
SELECT project_id, mode, 0, sum(stored_bytes), sum(stored_objects), sum(pending_bytes),
       sum(uploaded_files)
FROM (
    SELECT project_id, mode,
           CASE WHEN state <> 'pending' AND size IS NOT NULL THEN size ELSE 0 END,
           CASE WHEN state <> 'pending' AND size IS NOT NULL THEN 1 ELSE 0 END,
           CASE WHEN state = 'pending' THEN declared_size ELSE 0 END,
           0
    FROM files_storedobject WHERE state IN ('pending', 'live', 'discarded')
    UNION ALL
    SELECT project_id, mode, 0, 0, 0, 1 FROM files_file WHERE status = 'uploaded'
) AS counted (project_id, mode, stored_bytes, stored_objects, pending_bytes, uploaded_files)
GROUP BY project_id, mode;
"""

_CREATE = (
    "ALTER TABLE files_usagecounter SET (fillfactor = 50);\n"
    + "".join(_function(function, changes) for _, _, _, function, changes in _TRIGGERS)
    + "".join(
        _trigger(table, event, referencing, function)
        for table, event, referencing, function, _ in _TRIGGERS
    )
    + _BACKFILL
)

_DROP = "".join(
    f"DROP TRIGGER {function} ON {table};\nDROP FUNCTION {function}();\n"
    for table, _, _, function, _ in _TRIGGERS
)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_merge_0005_apikey_scopes_0005_project_limits"),
        ("files", "0010_move_friendly_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="UsageCounter",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "mode",
                    models.CharField(choices=[("test", "Test"), ("live", "Live")], max_length=4),
                ),
                ("slot", models.SmallIntegerField()),
                ("stored_bytes", models.BigIntegerField(default=0)),
                ("stored_objects", models.BigIntegerField(default=0)),
                ("pending_bytes", models.BigIntegerField(default=0)),
                ("uploaded_files", models.BigIntegerField(default=0)),
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
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "mode", "slot"), name="usagecounter_slot"
                    )
                ],
            },
        ),
        migrations.RunSQL(_CREATE, reverse_sql=_DROP),
    ]
