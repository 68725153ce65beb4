"""GET /v1/files latency over one project of 1,000,000 files: first page, a page 500,000 rows
deep, search, path, contentType, the trash and every sort, beside a naive OFFSET query.

    .venv/bin/python -m bench.list_files [--repeat 100] [--walk] [--rows 1000000]

``--rows`` seeds (and lists) that many files instead, with the deep page at half of them; the
figures at 1M and 3M in docs/scaling.md come from it.

The first run seeds the bench database (about a minute); later runs find the seeded project by
its row count and reuse it. Requests are sequential, from one requests.Session, against
the API server started as `make run` starts it. Then each API query's SQL (captured by running the
same request in-process) is EXPLAINed, to show which index serves it.

The deep page's cursor is built the way the API builds it: ``encode_cursor`` of the sort's
scope and the (sort value, id) of the row just before offset 500,000, read by SQL. That is the
cursor a client holds after following nextCursor 5,000 times; the bench checks it gives the
same rows as OFFSET 500000, and that a cursor built for offset 100 decodes to the first page's
own nextCursor. ``--walk`` follows the 5,000 cursors over HTTP instead (slower).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
import requests

from bench import _common as bench
from bench._explain import api_statements, explain, listing_sql, plan_summary

PROJECT_NAME = "bench-list-files"
ROWS = 1_000_000
DEEP = 500_000
LIMIT = 100
SELECTIVE_SEARCH = "IMG_4242"
COMMON_SEARCH = "report"
# ~0.3% of the files, all created within a few weeks (IMG_ numbers grow with time, as a
# camera's do), and made of trigrams that are each common: hard for either plan.
CLUSTERED_SEARCH = "IMG_42"
PATH = "team-7/year-2023"
# metadata[batch]=42: ~0.2% of the files (a fifth carry {"source", "batch": n % 97}).
METADATA = {"metadata[batch]": "42"}
# A folder tree: team-7 and its five year-<y> folders, ~1.5% of the files.
TREE = {"path": "team-7", "recursive": "true"}
CONTENT_TYPE = "application/pdf"
GOAL_P50_MS = 25.0
GOAL_DEEP_RATIO = 1.5


@dataclass(eq=False)  # identity: a query is itself, whatever its figures
class Query:
    label: str
    params: dict[str, str]
    matches: int | None = None
    samples: list[float] = field(default_factory=list)
    items: int = 0

    def p50(self) -> float:
        return bench.percentile(self.samples, 50)

    def p95(self) -> float:
        return bench.percentile(self.samples, 95)


# --- Database -------------------------------------------------------------------------------


def seeded_project(url: str) -> str | None:
    """The listing project if the bench database holds it with exactly ROWS files."""
    if not bench.database_exists(url):
        return None
    with bench.connect(url) as conn:
        row = conn.execute(
            "SELECT id FROM accounts_project WHERE name = %s ORDER BY created_at LIMIT 1",
            (PROJECT_NAME,),
        ).fetchone()
        if row is None:
            return None
        count = conn.execute(
            "SELECT count(*) FROM files_file WHERE project_id = %s", (row[0],)
        ).fetchone()
    project_id: str = row[0]
    return project_id if count is not None and count[0] == ROWS else None


def prepare_database(url: str) -> str:
    """Reuse the seeded project, or recreate the bench database and seed it. Its id."""
    bench.ensure_database(url)
    project_id = seeded_project(url)
    if project_id is None:
        bench.create_database(url, drop_first=True)
        bench.migrate(url)
    bench.setup_django(url)
    if project_id is not None:
        bench.log(f"reusing the seeded project {project_id} ({ROWS:,} files)")
        return project_id
    from accounts.services import project_create

    project = project_create(name=PROJECT_NAME)
    bench.log(f"seeding {ROWS:,} files into {project.id}")
    bench.seed_files(
        url,
        project_id=project.id,
        object_id=bench.shared_object(project.id),
        rows=ROWS,
        rebuild_indexes=True,
    )
    return project.id


def cursor_at(
    project: Any, sort_by: str, order: str, offset: int, params: dict[str, str] | None = None
) -> str:
    """The nextCursor of the page ending just before ``offset`` (rows ``offset - LIMIT`` ..
    ``offset - 1``) of the visible listing in this sort, filtered as ``params`` filter it
    (the list's own FileFilterSet), as the API would return it."""
    from accounts.tenancy import Tenant
    from files.filters import SORT_FIELDS, FileFilterSet
    from files.models import File
    from storage_service.pagination import encode_cursor

    field_name = SORT_FIELDS[sort_by]
    prefix = "-" if order == "desc" else ""
    listed = File.objects.for_tenant(Tenant(project=project, mode="test"))
    if params:
        filterset = FileFilterSet({**params, "sortBy": sort_by, "order": order}, queryset=listed)
        assert filterset.is_valid(), filterset.errors
        listed = filterset.qs
    value, row_id = (
        listed.visible()
        .order_by(f"{prefix}{field_name}", f"{prefix}id")
        .values_list(field_name, "id")[offset - 1]
    )
    return encode_cursor(f"files:{sort_by}:{order}", value, row_id)


def offset_sql(project: Any) -> tuple[str, tuple[Any, ...]]:
    """The naive deep page: what the ORM's listing with OFFSET would send, every column, the
    visible files of the project's test mode, newest first."""
    from files.models import File

    sql = (
        f"SELECT * FROM {File._meta.db_table}"
        " WHERE project_id = %s AND mode = 'test' AND NOT (status = %s)"
        " ORDER BY created_at DESC, id DESC OFFSET %s LIMIT %s"
    )
    return sql, (project.id, File.Status.DELETED.value, DEEP, LIMIT)


# --- HTTP -----------------------------------------------------------------------------------


def fetch(session: requests.Session, base_url: str, params: dict[str, str]) -> dict[str, Any]:
    response = session.get(f"{base_url}/v1/files", params=params, timeout=30)
    if response.status_code != 200:
        raise SystemExit(f"GET /v1/files {params} -> {response.status_code}: {response.text}")
    body: dict[str, Any] = response.json()
    return body


def walk_cursor(session: requests.Session, base_url: str, pages: int) -> str:
    params = {"limit": str(LIMIT)}
    started = time.monotonic()
    for page in range(pages):
        cursor = fetch(session, base_url, params)["pagination"]["nextCursor"]
        if cursor is None:
            raise SystemExit(f"the listing ended after {page + 1} pages")
        params = {"limit": str(LIMIT), "cursor": cursor}
        if (page + 1) % 1000 == 0:
            bench.log(f"walked {page + 1:,} pages ({time.monotonic() - started:.0f} s)")
    return params["cursor"]


def measure(session: requests.Session, base_url: str, queries: list[Query], repeat: int) -> None:
    """Round-robin over the queries, so drift affects them all alike."""
    for query in queries:  # warm-up: every worker's connection, caches, code paths
        for _ in range(3):
            query.items = len(fetch(session, base_url, query.params)["data"])
    for _ in range(repeat):
        for query in queries:
            started = time.perf_counter()
            fetch(session, base_url, query.params)
            query.samples.append((time.perf_counter() - started) * 1000)


def time_sql(url: str, sql: str, params: tuple[Any, ...], repeat: int) -> list[float]:
    """Milliseconds per execution + fetch of ``sql`` through psycopg.

    A ClientCursor, as Django uses: literals are inlined, so the planner sees 'deleted' and
    can use the partial indexes (a generic prepared plan could not).
    """
    samples = []
    with psycopg.connect(url, cursor_factory=psycopg.ClientCursor) as conn:
        for index in range(repeat + 2):
            started = time.perf_counter()
            rows = conn.execute(sql, params).fetchall()
            elapsed = (time.perf_counter() - started) * 1000
            if len(rows) not in (LIMIT, LIMIT + 1):  # the keyset page reads one row ahead
                raise SystemExit(f"expected {LIMIT} rows, got {len(rows)}")
            if index >= 2:
                samples.append(elapsed)
    return samples


# --- Main -----------------------------------------------------------------------------------


def main() -> int:
    global ROWS, DEEP  # read throughout; one run lists one size (--rows)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=100, help="timed requests per query")
    parser.add_argument(
        "--walk", action="store_true", help="reach the deep page by following 5,000 cursors"
    )
    parser.add_argument("--rows", type=int, default=ROWS, help="files in the listed project")
    args = parser.parse_args()
    ROWS, DEEP = args.rows, args.rows // 2
    url = bench.bench_database_url()
    project_id = prepare_database(url)

    from django.db.models import Q

    from accounts.models import Project
    from accounts.services import api_key_issue, api_key_revoke
    from accounts.tenancy import Tenant
    from files.filters import SORT_FIELDS
    from files.models import File
    from storage_service.pagination import decode_cursor

    project = Project.objects.select_related("organization").get(id=project_id)
    visible = File.objects.for_tenant(Tenant(project=project, mode="test")).visible()
    issued = api_key_issue(project=project, environment="test", name="bench list_files")
    try:
        base = {"limit": str(LIMIT)}
        deep_created = cursor_at(project, "createdAt", "desc", DEEP)
        deep_filename = cursor_at(project, "filename", "asc", DEEP)
        metadata_matches = visible.filter(metadata__contains={"batch": 42}).count()
        tree_matches = visible.filter(Q(path="team-7") | Q(path__startswith="team-7/")).count()

        def last_page(params: dict[str, str], matches: int) -> str:
            # The cursor a client holds before the last full page of this listing.
            return cursor_at(project, "createdAt", "desc", matches - LIMIT, params)

        queries = [
            Query("first page (createdAt desc)", base),
            Query(f"page {DEEP:,} rows deep (createdAt desc)", {**base, "cursor": deep_created}),
            Query(
                f"page {DEEP:,} rows deep (filename asc)",
                {**base, "sortBy": "filename", "order": "asc", "cursor": deep_filename},
            ),
            Query(
                f"search={SELECTIVE_SEARCH} (selective)",
                {**base, "search": SELECTIVE_SEARCH},
                visible.filter(filename__icontains=SELECTIVE_SEARCH).count(),
            ),
            Query(
                f"search={COMMON_SEARCH} (common)",
                {**base, "search": COMMON_SEARCH},
                visible.filter(filename__icontains=COMMON_SEARCH).count(),
            ),
            Query(
                f"search={CLUSTERED_SEARCH} (0.3%, clustered)",
                {**base, "search": CLUSTERED_SEARCH},
                visible.filter(filename__icontains=CLUSTERED_SEARCH).count(),
            ),
            Query(f"path={PATH}", {**base, "path": PATH}, visible.filter(path=PATH).count()),
            Query("metadata[batch]=42 (selective)", {**base, **METADATA}, metadata_matches),
            Query(
                "metadata[batch]=42, its last page",
                {**base, **METADATA, "cursor": last_page(METADATA, metadata_matches)},
                metadata_matches,
            ),
            Query("path=team-7 recursive=true", {**base, **TREE}, tree_matches),
            Query(
                "path=team-7 recursive=true, its last page",
                {**base, **TREE, "cursor": last_page(TREE, tree_matches)},
                tree_matches,
            ),
            Query(
                f"contentType={CONTENT_TYPE}",
                {**base, "contentType": CONTENT_TYPE},
                visible.filter(content_type=CONTENT_TYPE).count(),
            ),
            Query(
                "status=deleted (trash)",
                {**base, "status": "deleted"},
                File.objects.for_tenant(Tenant(project=project, mode="test"))
                .filter(status="deleted")
                .count(),
            ),
        ]
        for sort_by in SORT_FIELDS:
            for order in ("desc", "asc"):
                if (sort_by, order) != ("createdAt", "desc"):
                    queries.append(
                        Query(
                            f"sortBy={sort_by} order={order}",
                            {**base, "sortBy": sort_by, "order": order},
                        )
                    )

        offset_query = offset_sql(project)
        expected_deep = [
            row[0]
            for row in visible.order_by("-created_at", "-id").values_list("id")[DEEP : DEEP + LIMIT]
        ]

        with bench.api_server(url) as server, requests.Session() as session:
            session.headers["Authorization"] = f"Bearer {issued.raw_key}"
            first = fetch(session, server.base_url, base)
            scope = "files:createdAt:desc"
            if decode_cursor(first["pagination"]["nextCursor"], scope) != decode_cursor(
                cursor_at(project, "createdAt", "desc", LIMIT), scope
            ):
                raise SystemExit("a cursor built by SQL differs from the API's own nextCursor")
            if args.walk:
                bench.log(f"following {DEEP // LIMIT:,} cursors to row {DEEP:,}")
                queries[1].params = {
                    **base,
                    "cursor": walk_cursor(session, server.base_url, DEEP // LIMIT),
                }
            deep_ids = [f["id"] for f in fetch(session, server.base_url, queries[1].params)["data"]]
            if deep_ids != expected_deep:
                raise SystemExit("the deep page differs from rows OFFSET 500000 of the listing")
            bench.log("deep cursor checked: same rows as OFFSET 500000, same cursor as the API's")
            bench.log(f"measuring {len(queries)} queries x {args.repeat} sequential requests")
            cpu, client_cpu, started = server.cpu(), time.process_time(), time.monotonic()
            measure(session, server.base_url, queries, args.repeat)
            cpu_line = bench.cpu_note(
                server.cpu() - cpu, time.process_time() - client_cpu, time.monotonic() - started
            )
            server_line = server.describe()

        from django.test import Client

        client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
        statements = {id(q): api_statements(client, q.params) for q in queries}
        keyset_sql = listing_sql(statements[id(queries[1])])
        sql_repeat = max(20, args.repeat // 2)
        sql_offset = time_sql(url, *offset_query, repeat=sql_repeat)
        sql_keyset = time_sql(url, *keyset_sql, repeat=sql_repeat)

        plans = []
        for query in queries:
            statement = listing_sql(statements[id(query)])
            plans.append((query, statement, plan_summary(explain(*statement))))
        first_request = statements[id(queries[0])]
        auth_sql = next(s for s in first_request if "accounts_apikey" in s[0])
        per_request = {len(found) for found in statements.values()}
        auth_plan = plan_summary(explain(*auth_sql))
        offset_plan = plan_summary(explain(*offset_query))
    finally:
        api_key_revoke(key_id=issued.api_key.id)

    report(
        queries,
        plans,
        auth_plan,
        offset_plan,
        sql_offset,
        sql_keyset,
        per_request,
        server_line,
        cpu_line,
        args,
    )
    return 0


def report(
    queries: list[Query],
    plans: list[tuple[Query, tuple[str, tuple[Any, ...]], tuple[str, float, str]]],
    auth_plan: tuple[str, float, str],
    offset_plan: tuple[str, float, str],
    sql_offset: list[float],
    sql_keyset: list[float],
    per_request: set[int],
    server_line: str,
    cpu_line: str,
    args: argparse.Namespace,
) -> None:
    from django.conf import settings

    def ms(value: float) -> str:
        return f"{value:.1f}"

    print()
    print(f"GET /v1/files, one project of {ROWS:,} files, limit={LIMIT}")
    print(f"server: {server_line}, DEBUG={settings.DEBUG}")
    print(
        f"client: one requests.Session, sequential, {args.repeat} timed requests per query "
        "(its connection kept alive between requests, as the server allows)"
    )
    print()
    rows = [
        [
            q.label,
            "" if q.matches is None else f"{q.matches:,}",
            str(q.items),
            ms(q.p50()),
            ms(q.p95()),
        ]
        for q in queries
    ]
    rows.append(
        [
            "SQL only: deep page by cursor (psycopg)",
            "",
            str(LIMIT),
            ms(bench.percentile(sql_keyset, 50)),
            ms(bench.percentile(sql_keyset, 95)),
        ]
    )
    rows.append(
        [
            f"SQL only: OFFSET {DEEP} (naive, psycopg)",
            "",
            str(LIMIT),
            ms(bench.percentile(sql_offset, 50)),
            ms(bench.percentile(sql_offset, 95)),
        ]
    )
    print(bench.table(["query", "matches", "items", "p50 ms", "p95 ms"], rows))
    print(cpu_line)
    print()
    labelled = [(q.label, plan) for q, _, plan in plans]
    labelled.append(("(auth: API key lookup)", auth_plan))
    labelled.append((f"(naive OFFSET {DEEP})", offset_plan))
    plan_rows = [
        [label, f"{exec_ms:.2f}", buffers, summary]
        for label, (summary, exec_ms, buffers) in labelled
    ]
    print(
        "EXPLAIN (ANALYZE, BUFFERS) of each query's SQL, captured by sending the same request "
        "in-process (buffers: shared blocks hit / read); SQL statements per request: "
        + ", ".join(map(str, sorted(per_request)))
    )
    print(bench.table(["query", "exec ms", "buffers", "plan"], plan_rows, left=(0, 2, 3)))
    print()

    slow = [q for q in queries if q.p50() >= GOAL_P50_MS]
    print("Goals:")
    by_label = {q.label: q for q in queries}
    pairs = [(queries[0], queries[1])] + [
        (by_label[first], by_label[f"{first.split(' (')[0]}, its last page"])
        for first in ("metadata[batch]=42 (selective)", "path=team-7 recursive=true")
    ]
    for first, deep in pairs:
        ratio = deep.p50() / first.p50()
        print(
            f"  [{'PASS' if ratio <= GOAL_DEEP_RATIO else 'FAIL'}] {deep.label!r} p50 within "
            f"{GOAL_DEEP_RATIO}x of {first.label!r}: {deep.p50():.1f} ms / "
            f"{first.p50():.1f} ms = {ratio:.2f}x"
        )
    print(
        f"  [{'PASS' if not slow else 'FAIL'}] every API query p50 under {GOAL_P50_MS:.0f} ms"
        + ("" if not slow else ": missed by " + ", ".join(q.label for q in slow))
    )
    print(
        f"  (naive OFFSET {DEEP} costs {bench.percentile(sql_offset, 50):.1f} ms p50 in SQL "
        f"alone, vs {bench.percentile(sql_keyset, 50):.1f} ms for the keyset page)"
    )
    for query, statement, _ in plans:
        if query in slow:
            print()
            print(f"Plan of the slow query {query.label!r}:")
            print(explain(*statement, text=True))


if __name__ == "__main__":
    sys.exit(main())
