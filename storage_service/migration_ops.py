"""Migration helpers shared by the apps."""

from __future__ import annotations

from django.db import migrations


def drop_like_indexes(*tables: str) -> migrations.RunSQL:
    """Drop the ``*_like`` (varchar_pattern_ops) indexes PostgreSQL gets for CharField keys.

    Django adds one beside every indexed or unique CharField, for LIKE queries. Ids, key
    hashes and storage keys are only ever compared for equality, so these indexes cost every
    insert and serve nothing. Django drops indexes with IF EXISTS, so later field changes
    are unaffected.
    """
    names = ", ".join(f"'{table}'" for table in tables)
    return migrations.RunSQL(
        f"""
        DO $$
        DECLARE r record;
        BEGIN
            FOR r IN SELECT indexname FROM pg_indexes
                     WHERE schemaname = current_schema() AND tablename IN ({names})
                       AND indexname LIKE '%\\_like'
            LOOP
                EXECUTE format('DROP INDEX IF EXISTS %I', r.indexname);
            END LOOP;
        END $$;
        """,
        migrations.RunSQL.noop,
    )
