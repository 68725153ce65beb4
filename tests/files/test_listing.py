"""GET /v1/files and GET /v1/folders: keyset pages, filters, the trash."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from files.models import File
from tests.factories import Actor, png_bytes
from tests.helpers import start_upload, uploaded_file


def walk(actor: Actor, **query: Any) -> list[dict[str, Any]]:
    """Every page of a listing, following nextCursor until hasMore is false."""
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {**query, **({"cursor": cursor} if cursor else {})}
        body = actor.get("/v1/files", params).json()
        seen.extend(body["data"])
        if not body["pagination"]["hasMore"]:
            assert body["pagination"]["nextCursor"] is None
            return seen
        cursor = body["pagination"]["nextCursor"]
        assert cursor


@pytest.fixture
def seven_files(owner: Actor) -> list[dict[str, Any]]:
    files = []
    for i, size in enumerate([30, 10, 10, 50, 20, 10, 40]):
        files.append(
            start_upload(
                owner, b"x" * size, filename=f"{'BCDAEGF'[i]}-{i}.txt", content_type="text/plain"
            )["file"]
        )
    # Two files share a creation time and a size, so the id tie-break is exercised.
    same = timezone.now() - timedelta(days=1)
    File.objects.filter(id__in=[files[1]["id"], files[2]["id"]]).update(
        created_at=same, updated_at=same
    )
    return files


@pytest.mark.parametrize("sort_by", ["createdAt", "updatedAt", "filename", "size"])
@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize("limit", [1, 2])  # 1: a page ends between every two tied files
def test_every_sort_pages_through_every_file_once_in_order(
    owner: Actor, seven_files: list[dict[str, Any]], sort_by: str, order: str, limit: int
) -> None:
    listed = walk(owner, limit=limit, sortBy=sort_by, order=order)

    assert sorted(f["id"] for f in listed) == sorted(f["id"] for f in seven_files)
    keys = [(f[sort_by], f["id"]) for f in listed]
    assert keys == sorted(keys, reverse=order == "desc")


def test_default_is_newest_first_twenty_per_page(owner: Actor) -> None:
    for i in range(21):
        start_upload(owner, png_bytes(), filename=f"f{i}.png")
    body = owner.get("/v1/files").json()
    assert len(body["data"]) == 20
    assert body["pagination"]["hasMore"] is True
    assert body["data"][0]["filename"] == "f20.png"


def test_search_path_status_and_content_type_filters(owner: Actor) -> None:
    holiday = uploaded_file(owner, filename="Holiday_100%.png", path="trips/2026")
    start_upload(owner, png_bytes(), filename="holiday-notes.png", path="trips")
    start_upload(owner, b"%PDF", filename="tax.pdf", content_type="application/pdf")
    root = start_upload(owner, png_bytes(), filename="root.png")["file"]

    def names(**query: Any) -> set[str]:
        return {f["filename"] for f in owner.get("/v1/files", query).json()["data"]}

    assert names(search="HOLIDAY") == {"Holiday_100%.png", "holiday-notes.png"}
    assert names(search="100%") == {"Holiday_100%.png"}  # LIKE wildcards are literal
    assert names(search="_1") == {"Holiday_100%.png"}
    assert names(search="no-such-name") == set()
    assert names(path="trips/2026") == {holiday["filename"]}
    assert names(path="trips") == {"holiday-notes.png"}
    assert names(path="/") == {root["filename"], "tax.pdf"}
    assert names(status="uploaded") == {holiday["filename"]}
    assert names(contentType="application/pdf") == {"tax.pdf"}


@pytest.mark.parametrize("status", ["", "archived"])
def test_an_empty_or_unknown_status_is_refused(owner: Actor, status: str) -> None:
    # An empty `?status=` is not "no filter": it is refused like any unknown status.
    response = owner.get("/v1/files", {"status": status})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert "status" in response.json()["error"]["details"]


def test_deleted_files_appear_only_in_the_trash(owner: Actor) -> None:
    kept = uploaded_file(owner, filename="kept.png")
    gone = uploaded_file(owner, filename="gone.png")
    owner.delete(f"/v1/files/{gone['id']}")

    listed = owner.get("/v1/files").json()["data"]
    trash = owner.get("/v1/files", {"status": "deleted"}).json()["data"]

    assert [f["id"] for f in listed] == [kept["id"]]
    assert [f["id"] for f in trash] == [gone["id"]]
    assert trash[0]["status"] == "deleted"
    assert trash[0]["deletedAt"].endswith("Z")


def test_folders_are_derived_from_paths(owner: Actor) -> None:
    for path in ["photos/2025", "photos/2026", "photos/2026", "photos", "docs", None]:
        start_upload(owner, png_bytes(), path=path)
    gone = uploaded_file(owner, path="old/stuff")
    owner.delete(f"/v1/files/{gone['id']}")

    root = owner.get("/v1/folders").json()
    photos = owner.get("/v1/folders", {"parent": "photos"}).json()

    assert root["data"] == [
        {"path": "docs", "name": "docs", "parent": None, "fileCount": 1},
        {"path": "photos", "name": "photos", "parent": None, "fileCount": 4},
    ]
    assert photos["data"] == [
        {"path": "photos/2025", "name": "2025", "parent": "photos", "fileCount": 1},
        {"path": "photos/2026", "name": "2026", "parent": "photos", "fileCount": 2},
    ]
    assert owner.get("/v1/folders", {"parent": "photos/2026"}).json()["data"] == []


def test_folders_page_by_name(owner: Actor) -> None:
    for name in ["a", "b", "c"]:
        start_upload(owner, png_bytes(), path=name)
    first = owner.get("/v1/folders", {"limit": 2}).json()
    second = owner.get(
        "/v1/folders", {"limit": 2, "cursor": first["pagination"]["nextCursor"]}
    ).json()
    assert [f["name"] for f in first["data"]] == ["a", "b"]
    assert [f["name"] for f in second["data"]] == ["c"]
    assert second["pagination"] == {"hasMore": False, "nextCursor": None}


@pytest.mark.parametrize("query", [{"parent": "/x"}, {"limit": 0}, {"cursor": "zzz"}])
def test_folders_refuse_bad_query(owner: Actor, query: dict[str, Any]) -> None:
    response = owner.get("/v1/folders", query)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"


def test_list_issues_a_fixed_number_of_queries(
    owner: Actor, django_assert_max_num_queries: Any
) -> None:
    for i in range(30):
        start_upload(owner, png_bytes(), filename=f"f{i}.png")
    with django_assert_max_num_queries(2):  # the key lookup, the page
        assert len(owner.get("/v1/files", {"limit": 30}).json()["data"]) == 30


@pytest.mark.parametrize("window", [5000, 3, 0], ids=["window-fills", "window-short", "no-window"])
@pytest.mark.parametrize("sort_by", ["createdAt", "filename", "size"])
def test_every_search_plan_gives_the_plain_querys_pages(
    owner: Actor, monkeypatch: pytest.MonkeyPatch, window: int, sort_by: str
) -> None:
    """Both search steps answer exactly what a plain filter-and-sort would."""
    monkeypatch.setattr("files.selectors.SEARCH_WINDOW_ROWS", window)
    names = [f"{'match' if i % 3 else 'other'}-{i:02d}.txt" for i in range(14)]
    for i, name in enumerate(names):
        start_upload(owner, b"x" * (i % 4 + 1), filename=name, content_type="text/plain")

    listed = walk(owner, limit=2, search="MATCH", sortBy=sort_by, order="desc")

    expected = [
        f for f in walk(owner, limit=100, sortBy=sort_by, order="desc") if "match" in f["filename"]
    ]
    assert [f["id"] for f in listed] == [f["id"] for f in expected]
    assert len(listed) == 9


def test_search_is_the_same_without_the_trigram_index(owner: Actor) -> None:
    """Where pg_trgm is missing the index is too; search then scans, with the same answer."""
    for name in ["alpha.png", "ALPHABET.txt", "beta.png", "x_alpha_y.csv"]:
        start_upload(owner, png_bytes(), filename=name)
    with_index = [f["id"] for f in owner.get("/v1/files", {"search": "alpha"}).json()["data"]]

    with connection.cursor() as cursor:  # undone with the test's transaction
        cursor.execute("DROP INDEX IF EXISTS file_filename_trgm")
    without_index = [f["id"] for f in owner.get("/v1/files", {"search": "alpha"}).json()["data"]]

    assert len(with_index) == 3
    assert without_index == with_index


def test_folder_parents_with_like_wildcards_match_literally(owner: Actor) -> None:
    for path in ["a_b/in", "axb/out", "50%/in", "50x/out"]:
        start_upload(owner, png_bytes(), path=path)
    for parent in ["a_b", "50%"]:
        children = owner.get("/v1/folders", {"parent": parent}).json()["data"]
        assert [f["path"] for f in children] == [f"{parent}/in"]


@pytest.mark.parametrize(
    ("query", "message", "details"),
    [
        (
            "?limit=0&status=gone",
            "The request is invalid.",
            {
                "limit": ["Must be from 1 to 100."],
                "status": ["Must be one of: pending, uploaded, failed, deleted."],
            },
        ),
        (
            "?limit=0&cursor=zz&sortBy=x",
            "The request is invalid.",
            {
                "limit": ["Must be from 1 to 100."],
                "sortBy": ["Must be one of: createdAt, updatedAt, filename, size."],
            },
        ),
        (
            "?limit=1&limit=2",
            "A query parameter was given more than once.",
            {"limit": ["Given more than once."]},
        ),
        (
            "?cursor=",
            "The request is invalid.",
            {"cursor": ["Pass the previous page's nextCursor, unchanged."]},
        ),
        (
            "?cursor=garbage",
            "The cursor is invalid; pass nextCursor back unchanged.",
            {"cursor": ["Invalid cursor."]},
        ),
    ],
)
def test_a_refused_list_query_names_every_bad_parameter(
    owner: Actor, query: str, message: str, details: dict[str, list[str]]
) -> None:
    response = owner.client.get(f"/v1/files{query}")
    assert response.status_code == 400
    assert response.json() == {
        "error": {"code": "VALIDATION_ERROR", "message": message, "details": details}
    }


def test_a_cursor_of_another_sort_or_tampered_is_refused(owner: Actor) -> None:
    for name in ["a", "b"]:
        start_upload(owner, png_bytes(), filename=f"{name}.png")
    cursor = owner.get("/v1/files", {"limit": 1}).json()["pagination"]["nextCursor"]

    other = owner.get("/v1/files", {"limit": 1, "sortBy": "size", "cursor": cursor})
    tampered = owner.get("/v1/files", {"limit": 1, "cursor": cursor[:-2] + "xx"})

    assert other.status_code == tampered.status_code == 400
    assert other.json()["error"]["details"] == {"cursor": ["Cursor does not match sortBy/order."]}
    assert tampered.json()["error"]["details"] == {"cursor": ["Invalid cursor."]}


def test_the_same_query_from_two_projects_pages_through_each_ones_own_files(
    owner: Actor, sibling: Actor
) -> None:
    """A page's statement is compiled once per shape of query: the next project, folder or
    cursor sending the same query gets its own rows."""
    for actor, count in ((owner, 5), (sibling, 3)):
        for i in range(count):
            start_upload(actor, png_bytes(), filename=f"{actor.project.name}-{i}.png", path="same")
        start_upload(actor, png_bytes(), filename=f"{actor.project.name}-other.png", path="other")

    for actor, count in ((owner, 5), (sibling, 3), (owner, 5)):
        listed = walk(actor, path="same", limit=2)
        assert len(listed) == count
        assert {f["filename"] for f in listed} == {
            f"{actor.project.name}-{i}.png" for i in range(count)
        }
        assert [f["filename"] for f in walk(actor, path="other", limit=2)] == [
            f"{actor.project.name}-other.png"
        ]
