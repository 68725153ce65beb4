"""The retention sweep's cost per batch as the tables grow: flat, or it would fall behind.

    .venv/bin/python -m scripts.devservices exec -- .venv/bin/python -m bench.retention \
        [--rows 1000000] [--batch 5000]

Seeds ``--rows`` events and as many deliveries (one per event) into the bench database, all
past the retention window, plus 10% inside it (kept), then runs the sweep
(``events.services.events_delete_expired``) to the end and prints the time of each batch
(select a page of ids on the primary key, delete it) by decile of the run: the first batches
run over the full tables, the last over nearly empty ones. A sweep that rescanned from the
start, or scanned for the cutoff, would grow with the rows deleted before it; this one reads
each page where the previous ended.
"""

from __future__ import annotations

import argparse
import time

from bench import _common as bench

# Fixed ids of the right length (prefix + 26 characters), so reruns replace the same rows.
PROJECT = "proj_" + "0" * 20 + "bench0"
ORGANIZATION = "org_" + "0" * 20 + "bench0"
ENDPOINT = "wh_" + "0" * 20 + "bench0"


def seed(rows: int) -> None:
    from django.db import connection

    now_ms = int(time.time() * 1000)
    old_start = now_ms - 60 * 86_400_000  # 60 days ago, one row a millisecond onwards
    kept = rows // 10
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM webhooks_delivery")
        cursor.execute("DELETE FROM webhooks_event")
        cursor.execute("DELETE FROM webhooks_endpoint WHERE project_id = %s", [PROJECT])
        cursor.execute(
            "INSERT INTO accounts_organization (id, name, created_at) "
            "VALUES (%s, 'bench-retention', now()) ON CONFLICT DO NOTHING",
            [ORGANIZATION],
        )
        cursor.execute(
            "INSERT INTO accounts_project (id, organization_id, name, created_at) "
            "VALUES (%s, %s, 'bench-retention', now()) "
            "ON CONFLICT DO NOTHING",
            [PROJECT, ORGANIZATION],
        )
        cursor.execute(
            "INSERT INTO webhooks_endpoint (id, project_id, mode, url, secret, status, created_at) "
            "VALUES (%s, %s, 'test', 'https://example.com/', 'x', "
            "'ACTIVE', now())",
            [ENDPOINT, PROJECT],
        )
        for label, start, count in (("old", old_start, rows), ("kept", now_ms - 86_400_000, kept)):
            started = time.monotonic()
            millis = f"({start} + n)"
            evt = f"'evt_' || {bench.crockford(millis, 10)} || {bench.crockford('n', 16)}"
            dl = f"'dl_' || {bench.crockford(millis, 10)} || {bench.crockford('n', 16)}"
            cursor.execute(
                f"""
                INSERT INTO webhooks_event (id, project_id, mode, type, data, created_at)
                SELECT {evt}, %s, 'test', 'file.downloaded',
                       jsonb_build_object('fileId', 'file_' || n, 'filename', 'f' || n),
                       to_timestamp({millis} / 1000.0)
                FROM generate_series(1, %s) AS n
                """,
                [PROJECT, count],
            )
            cursor.execute(
                f"""
                INSERT INTO webhooks_delivery
                    (id, endpoint_id, event_id, status, attempts, created_at, response_status)
                SELECT {dl}, %s, {evt}, 'DELIVERED', 1,
                       to_timestamp({millis} / 1000.0), 200
                FROM generate_series(1, %s) AS n
                """,
                [ENDPOINT, count],
            )
            seconds = time.monotonic() - started
            bench.log(f"seeded {count:,} {label} events and deliveries in {seconds:.0f} s")
        cursor.execute("VACUUM ANALYZE webhooks_event")
        cursor.execute("VACUUM ANALYZE webhooks_delivery")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=5000)
    args = parser.parse_args()
    url = bench.bench_database_url()
    bench.ensure_database(url)
    bench.setup_django(url)
    from django.conf import settings
    from django.db import connection

    from events.services import events_delete_expired

    connection.set_autocommit(True)
    seed(args.rows)
    settings.SERVICE_RETENTION_BATCH_SIZE = args.batch
    started = time.monotonic()
    report = events_delete_expired(max_batches=10**9)
    total = time.monotonic() - started
    batches = report.batch_seconds
    rows = []
    tenth = max(1, len(batches) // 10)
    for decile in range(0, len(batches), tenth):
        part = [s * 1000 for s in batches[decile : decile + tenth]]
        rows.append(
            (
                f"batches {decile + 1}-{decile + len(part)}",
                f"{bench.percentile(part, 50):.1f}",
                f"{bench.percentile(part, 90):.1f}",
                f"{max(part):.1f}",
            )
        )
    print(
        f"retention sweep: {report.deliveries:,} deliveries and {report.events:,} events "
        f"deleted in {len(batches)} batches of {args.batch} ({total:.1f} s, "
        f"{(report.deliveries + report.events) / total:,.0f} rows/s)"
    )
    print(bench.table(("part of the run", "p50 ms", "p90 ms", "max ms"), rows))


if __name__ == "__main__":
    main()
