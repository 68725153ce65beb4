"""What SQL an API request runs, and the plan PostgreSQL makes of it: the statements of a
request run in-process (the whole Django stack, so the SQL the server runs), the listing query
among them, its EXPLAIN (ANALYZE, BUFFERS), and a one-line summary of the plan (the nodes,
the index each uses, the rows filtered out, the buffers)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def api_statements(client: Any, params: dict[str, str]) -> list[tuple[str, tuple[Any, ...]]]:
    """Every SQL statement (with its parameters) that GET /v1/files with ``params`` runs,
    in order: the request goes through the whole Django stack in-process, so this is the
    SQL the server runs, whatever the selectors and filters look like inside."""
    from django.db import connection

    captured: list[tuple[str, tuple[Any, ...]]] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        captured.append((sql, tuple(params or ())))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        response = client.get("/v1/files", params)
    if response.status_code != 200:
        raise SystemExit(f"in-process GET /v1/files {params} -> {response.status_code}")
    return captured


def listing_sql(statements: list[tuple[str, tuple[Any, ...]]]) -> tuple[str, tuple[Any, ...]]:
    """The listing query among a request's statements: the last one reading files_file."""
    return [s for s in statements if "files_file" in s[0]][-1]


def explain(sql: str, params: tuple[Any, ...], *, text: bool = False) -> Any:
    from django.db import connection

    fmt = "TEXT" if text else "JSON"
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT {fmt}) {sql}", params)
        rows = cursor.fetchall()
    if text:
        return "\n".join(row[0] for row in rows)
    plan = rows[0][0]
    return json.loads(plan) if isinstance(plan, str) else plan


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def plan_summary(result: Any) -> tuple[str, float, str]:
    """("Limit > Index Scan using file_list_created", execution ms, buffers) of a JSON plan."""
    top = result[0]
    root = top["Plan"]
    parts = []
    removed = 0
    for node in _nodes(root):
        name = node["Node Type"]
        if node.get("Scan Direction") == "Backward":
            name += " Backward"
        if "Index Name" in node:
            name += f" using {node['Index Name']}"
        parts.append(name)
        removed += int(node.get("Rows Removed by Filter", 0))
        removed += int(node.get("Rows Removed by Index Recheck", 0))
    summary = " > ".join(parts)
    if removed:
        summary += f" ({removed:,} rows filtered out)"
    buffers = f"hit {root.get('Shared Hit Blocks', 0)}, read {root.get('Shared Read Blocks', 0)}"
    return summary, float(top["Execution Time"]), buffers
