"""Per-tenant usage counters (files_usagecounter), kept by triggers.

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


_FUNCTIONS = """
ALTER TABLE files_usagecounter SET (fillfactor = 50);

CREATE FUNCTION files_usage_add(
    p_project text, p_mode text,
    d_bytes bigint, d_objects bigint, d_pending bigint, d_files bigint
) RETURNS void LANGUAGE sql AS $$
    INSERT INTO files_usagecounter
        (project_id, mode, slot, stored_bytes, stored_objects, pending_bytes, uploaded_files)
    VALUES (p_project, p_mode, pg_backend_pid() % 16, d_bytes, d_objects, d_pending, d_files)
    ON CONFLICT (project_id, mode, slot) DO UPDATE SET
        stored_bytes = files_usagecounter.stored_bytes + EXCLUDED.stored_bytes,
        stored_objects = files_usagecounter.stored_objects + EXCLUDED.stored_objects,
        pending_bytes = files_usagecounter.pending_bytes + EXCLUDED.pending_bytes,
        uploaded_files = files_usagecounter.uploaded_files + EXCLUDED.uploaded_files
$$;

-- What one object adds: its size when the store holds it (live or discarded, size known),
-- its declared size while it is pending. files/usage.py counts the same.
CREATE FUNCTION files_usage_storedobject() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_bytes bigint := 0; old_objects bigint := 0; old_pending bigint := 0;
    new_bytes bigint := 0; new_objects bigint := 0; new_pending bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        IF OLD.state IN ('live', 'discarded') AND OLD.size IS NOT NULL THEN
            old_bytes := OLD.size; old_objects := 1;
        ELSIF OLD.state = 'pending' THEN
            old_pending := OLD.declared_size;
        END IF;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        IF NEW.state IN ('live', 'discarded') AND NEW.size IS NOT NULL THEN
            new_bytes := NEW.size; new_objects := 1;
        ELSIF NEW.state = 'pending' THEN
            new_pending := NEW.declared_size;
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.project_id = NEW.project_id AND OLD.mode = NEW.mode THEN
        IF new_bytes <> old_bytes OR new_objects <> old_objects OR new_pending <> old_pending THEN
            PERFORM files_usage_add(NEW.project_id, NEW.mode, new_bytes - old_bytes,
                                    new_objects - old_objects, new_pending - old_pending, 0);
        END IF;
        RETURN NULL;
    END IF;
    IF old_bytes <> 0 OR old_objects <> 0 OR old_pending <> 0 THEN
        PERFORM files_usage_add(OLD.project_id, OLD.mode, -old_bytes, -old_objects,
                                -old_pending, 0);
    END IF;
    IF new_bytes <> 0 OR new_objects <> 0 OR new_pending <> 0 THEN
        PERFORM files_usage_add(NEW.project_id, NEW.mode, new_bytes, new_objects,
                                new_pending, 0);
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION files_usage_file() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.status = 'uploaded' THEN
        PERFORM files_usage_add(OLD.project_id, OLD.mode, 0, 0, 0, -1);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.status = 'uploaded' THEN
        PERFORM files_usage_add(NEW.project_id, NEW.mode, 0, 0, 0, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER files_usage_storedobject_write
    AFTER INSERT OR DELETE ON files_storedobject
    FOR EACH ROW EXECUTE FUNCTION files_usage_storedobject();
-- Most updates of an object (checksum, sniffed type, purged_at) change nothing counted.
CREATE TRIGGER files_usage_storedobject_update
    AFTER UPDATE ON files_storedobject
    FOR EACH ROW WHEN (
        OLD.state IS DISTINCT FROM NEW.state
        OR OLD.size IS DISTINCT FROM NEW.size
        OR OLD.declared_size IS DISTINCT FROM NEW.declared_size
        OR OLD.project_id IS DISTINCT FROM NEW.project_id
        OR OLD.mode IS DISTINCT FROM NEW.mode
    ) EXECUTE FUNCTION files_usage_storedobject();
CREATE TRIGGER files_usage_file_write
    AFTER INSERT OR DELETE ON files_file
    FOR EACH ROW EXECUTE FUNCTION files_usage_file();
-- Renames, moves, metadata and replacements leave the status as it is.
CREATE TRIGGER files_usage_file_update
    AFTER UPDATE ON files_file
    FOR EACH ROW WHEN (
        (OLD.status = 'uploaded' OR NEW.status = 'uploaded')
        AND (
            OLD.status IS DISTINCT FROM NEW.status
            OR OLD.project_id IS DISTINCT FROM NEW.project_id
            OR OLD.mode IS DISTINCT FROM NEW.mode
        )
    ) EXECUTE FUNCTION files_usage_file();

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

_DROP = """
DROP TRIGGER files_usage_file_update ON files_file;
DROP TRIGGER files_usage_file_write ON files_file;
DROP TRIGGER files_usage_storedobject_update ON files_storedobject;
DROP TRIGGER files_usage_storedobject_write ON files_storedobject;
DROP FUNCTION files_usage_file();
DROP FUNCTION files_usage_storedobject();
DROP FUNCTION files_usage_add(text, text, bigint, bigint, bigint, bigint);
"""


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
        migrations.RunSQL(_FUNCTIONS, reverse_sql=_DROP),
    ]
