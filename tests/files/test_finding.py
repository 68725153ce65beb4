"""Finding files: metadata[<key>]=<value> and recursive=true with path, combined with every
other filter, sort and cursor, each served by an index."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from files.filters import FileFilterSet, file_ordering
from files.models import File
from tests.factories import Actor
from tests.helpers import error_code, start_upload, uploaded_file


def ids(actor: Actor, **params: Any) -> list[str]:
    response = actor.get("/v1/files", params)
    assert response.status_code == 200, response.json()
    return [f["id"] for f in response.json()["data"]]


def every_page(actor: Actor, **params: Any) -> list[str]:
    found: list[str] = []
    cursor = None
    while True:
        query = {**params, "limit": 2, **({"cursor": cursor} if cursor else {})}
        body = actor.get("/v1/files", query).json()
        found += [f["id"] for f in body["data"]]
        if not body["pagination"]["hasMore"]:
            return found
        cursor = body["pagination"]["nextCursor"]


def made(actor: Actor, **body: Any) -> str:
    return str(start_upload(actor, **body)["file"]["id"])


def test_metadata_matches_strings_numbers_and_booleans_by_their_json_text(owner: Actor) -> None:
    number = made(owner, metadata={"year": 2026, "draft": False})
    text = made(owner, metadata={"year": "2026", "draft": "false"})
    other = made(owner, metadata={"year": 2025, "team": "ops"})
    made(owner, metadata={"nested": {"year": 2026}})
    made(owner)

    assert set(ids(owner, **{"metadata[year]": "2026"})) == {number, text}
    assert set(ids(owner, **{"metadata[draft]": "false"})) == {number, text}
    assert ids(owner, **{"metadata[year]": "2025", "metadata[team]": "ops"}) == [other]
    assert ids(owner, **{"metadata[year]": "2026", "metadata[team]": "ops"}) == []
    # JSON's number text only: "02026", "+2026" and "2026.0 " are only strings.
    assert ids(owner, **{"metadata[year]": "02026"}) == []
    assert ids(owner, **{"metadata[draft]": "False"}) == []
    # Numbers compare as numbers: 2026.0 is the JSON number 2026.
    assert ids(owner, **{"metadata[year]": "2026.0"}) == [number]
    assert ids(owner, **{"metadata[year]": "1e999"}) == []


def test_metadata_keys_and_values_are_taken_literally(owner: Actor) -> None:
    odd = made(owner, metadata={"a]b": "x%_", 'q"uote': "it's", "ü": "日本"})
    made(owner, metadata={"ab": "xyz"})

    assert ids(owner, **{"metadata[a]b]": "x%_"}) == [odd]
    assert ids(owner, **{'metadata[q"uote]': "it's"}) == [odd]
    assert ids(owner, **{"metadata[ü]": "日本"}) == [odd]
    assert ids(owner, **{"metadata[a]b]": "x%"}) == []


def test_recursive_lists_the_folder_and_every_folder_below_it(owner: Actor) -> None:
    top = made(owner, path="a")
    child = made(owner, path="a/b")
    deep = made(owner, path="a/b/c/d")
    made(owner, path="ab")  # a sibling whose name starts the same
    made(owner, path="a_")  # LIKE's wildcard, taken literally
    root = made(owner)

    assert set(ids(owner, path="a", recursive="true")) == {top, child, deep}
    assert set(ids(owner, path="a/b", recursive="true")) == {child, deep}
    assert ids(owner, path="a", recursive="false") == [top]
    assert ids(owner, path="a") == [top]
    assert len(ids(owner, path="/", recursive="true")) == 6
    assert root in ids(owner, path="/", recursive="true")


def test_both_combine_with_every_filter_sort_and_the_cursor(owner: Actor) -> None:
    wanted = [
        uploaded_file(owner, b"x" * n, contentType="text/plain", filename=f"{n}.txt",
                      path=f"p/{n % 2}", metadata={"k": "v"})["id"]
        for n in range(1, 6)
    ]  # fmt: skip
    uploaded_file(owner, b"y", contentType="text/plain", filename="z.txt", path="p",
                  metadata={"k": "w"})  # fmt: skip
    start_upload(owner, path="p/1", metadata={"k": "v"})  # pending image: other status/type
    deleted = uploaded_file(owner, b"d", contentType="text/plain", filename="d.txt",
                            path="p/1", metadata={"k": "v"})["id"]  # fmt: skip
    owner.delete(f"/v1/files/{deleted}")
    query = {"metadata[k]": "v", "path": "p", "recursive": "true", "status": "uploaded",
             "contentType": "text/plain"}  # fmt: skip

    for sort_by, order in [("size", "asc"), ("size", "desc"), ("filename", "asc"),
                           ("createdAt", "desc"), ("updatedAt", "asc")]:  # fmt: skip
        listed = every_page(owner, **query, sortBy=sort_by, order=order)
        expected = wanted if order == "asc" else wanted[::-1]
        if sort_by in ("createdAt", "updatedAt"):
            assert sorted(listed) == sorted(wanted)
        else:
            assert listed == expected
    assert ids(owner, **query, search="3.t") == [wanted[2]]
    assert ids(owner, **{**query, "status": "deleted"}) == [deleted]


@pytest.mark.parametrize(
    "params",
    [
        {f"metadata[k{n}]": "v" for n in range(11)},
        {"metadata[]": "v"},
        {"metadata[" + "k" * 129 + "]": "v"},
        {"metadata[" + "ü" * 128 + "]": "v"},  # 128 characters, 256 bytes: fine
        {"metadata[a\x01]": "v"},
        {"metadata[a]": "v\x00"},
        {"metadata[a]": "v\n"},
        {"metadata[a]": "x" * 257},
        {"metadata": "v"},
        {"recursive": "yes"},
        {"recursive": ""},
    ],
)
def test_hostile_filters_are_refused_with_400(owner: Actor, params: dict[str, str]) -> None:
    made(owner, metadata={"a": "v"})

    response = owner.get("/v1/files", params)

    if params == {"metadata[" + "ü" * 128 + "]": "v"}:
        assert response.status_code == 200
        return
    assert response.status_code == 400, response.json()
    assert error_code(response) == "VALIDATION_ERROR"


def test_a_metadata_filter_given_twice_is_refused(owner: Actor) -> None:
    response = owner.client.get("/v1/files?metadata[a]=1&metadata[a]=2")
    assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"


def _plan(owner: Actor, **params: str) -> str:
    data = {"sortBy": "createdAt", "order": "desc", **params}
    filterset = FileFilterSet(data, queryset=File.objects.for_tenant(owner.tenant))
    assert filterset.is_valid(), filterset.errors
    page = filterset.qs.order_by(*file_ordering("createdAt", "desc"))[:21]
    sql, sql_params = page.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", sql_params)
        return "\n".join(row[0] for row in cursor.fetchall())


def _many_files(owner: Actor, template: str, count: int) -> None:
    """``count`` copies of the template file, elsewhere and with other metadata, so that
    the planner sees a project where the filters are selective."""
    columns = [f.column for f in File._meta.local_concrete_fields if f.column != "id"]
    chosen = {
        "path": "'other/' || (n %% 50)",
        "metadata": "jsonb_build_object('k', 'other' || (n %% 100))",
        "created_at": "created_at + n * interval '1 second'",
    }
    selected = ", ".join(chosen.get(c, c) for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO files_file (id, {', '.join(columns)}) "
            f"SELECT 'file_' || lpad(n::text, 26, '0'), {selected} "
            "FROM files_file, generate_series(1, %s) AS n WHERE id = %s",
            [count, template],
        )
        cursor.execute("ANALYZE files_file")


def test_each_filter_is_served_by_an_index(owner: Actor) -> None:
    _many_files(owner, made(owner, metadata={"k": "v"}, path="a/b"), 5000)

    assert "file_metadata" in _plan(owner, **{"metadata[k]": "v"})
    assert "file_path_prefix" in _plan(owner, path="a", recursive="true")
