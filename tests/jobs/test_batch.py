"""POST /v1/files/batch: each operation answered exactly as its single endpoint answers, a
malformed batch refused whole with nothing done, the rate limit per operation, and the
Idempotency-Key."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from accounts import throttling
from events.models import Event
from files.models import File
from tests.factories import Actor
from tests.helpers import error_code, within_one_window
from tests.jobs.seeding import seed_files

pytestmark = pytest.mark.django_db

# Fields that differ between two files or two moments, whatever the endpoint.
VOLATILE = {"id", "createdAt", "updatedAt", "uploadedAt", "deletedAt"}


def stable(body: Any) -> Any:
    """A body without the ids and times that differ between twin files."""
    if isinstance(body, dict):
        return {k: stable(v) for k, v in body.items() if k not in VOLATILE}
    return body


def single(actor: Actor, op: str, file_id: str, fields: dict[str, Any]) -> Any:
    if op == "update":
        return actor.patch(f"/v1/files/{file_id}", fields)
    if op == "delete":
        return actor.delete(f"/v1/files/{file_id}")
    if op == "restore":
        return actor.post(f"/v1/files/{file_id}/restore")
    return actor.post(f"/v1/files/{file_id}/copy", fields)


def batch(actor: Actor, operations: Any, **headers: Any) -> Any:
    return actor.post("/v1/files/batch", {"operations": operations}, **headers)


def test_each_operation_is_answered_as_its_single_endpoint_in_request_order(
    owner: Actor, sibling: Actor
) -> None:
    # Twin files: the batch works on one set, the single endpoints on the other.
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("update", {"filename": "new.txt", "path": "a/b", "metadata": {"k": [1, "v"]}}, "ok"),
        ("update", {"path": None}, "ok"),
        ("delete", {}, "ok"),
        ("restore", {}, "deleted"),
        ("restore", {}, "ok"),  # not deleted: 409 FILE_NOT_DELETED
        ("copy", {"filename": "copy.txt", "path": "c"}, "ok"),
        ("copy", {}, "pending"),  # 409 FILE_NOT_UPLOADED
        ("update", {"filename": "x.txt"}, "missing"),  # 404 FILE_NOT_FOUND
        ("delete", {}, "foreign"),  # another project's file: 404 as if missing
        ("delete", {}, "malformed"),  # not an id: 404
    ]

    def make(kind: str) -> str:
        if kind == "missing":
            return "file_01m80p9qhfbw0rf406y6kr13qe"
        if kind == "malformed":
            return "file_NOT;an id"
        if kind == "foreign":
            return seed_files(sibling, ["s"])[0].id
        status = {"deleted": "deleted", "pending": "pending"}.get(kind, "uploaded")
        file = seed_files(owner, ["p"], status=status)[0]
        if status == "deleted":
            # Deleted while pending: restored without asking the store for bytes.
            File.objects.filter(id=file.id).update(status_before_delete="pending")
        return file.id

    batch_ids = [make(kind) for _, _, kind in cases]
    single_ids = [make(kind) for _, _, kind in cases]
    events_before = Event.objects.count()
    response = batch(
        owner,
        [
            {"op": op, "id": file_id, **fields}
            for (op, fields, _), file_id in zip(cases, batch_ids, strict=True)
        ],
    )
    assert response.status_code == 200, response.json()
    results = response.json()["data"]
    batch_events = Event.objects.count() - events_before

    expected = []
    for (op, fields, _), file_id in zip(cases, single_ids, strict=True):
        answer = single(owner, op, file_id, fields)
        expected.append((op, answer.status_code, stable(answer.json())))
    single_events = Event.objects.count() - events_before - batch_events

    assert [(r["op"], r["status"], stable(r["body"])) for r in results] == expected
    assert [r["id"] for r in results] == batch_ids
    assert [r["status"] for r in results] == [200, 200, 200, 200, 409, 201, 409, 404, 404, 404]
    assert results[2]["body"] == {"data": {"id": batch_ids[2], "deleted": True}}
    assert results[0]["body"]["id"] == batch_ids[0]
    # The same events as the single endpoints made, one per change.
    assert batch_events == single_events == 6 + 1  # update 1 makes three (rename, move, meta)
    assert File.objects.get(id=batch_ids[0]).filename == "new.txt"
    assert File.objects.get(id=batch_ids[2]).status == "deleted"
    assert File.objects.filter(filename="copy.txt", path="c").count() == 2


def test_one_refused_operation_does_not_stop_or_undo_the_others(owner: Actor) -> None:
    a, b = seed_files(owner, ["x", "x"])
    response = batch(
        owner,
        [
            {"op": "update", "id": a.id, "path": "moved"},
            {"op": "restore", "id": a.id + "0"},
            {"op": "delete", "id": b.id},
        ],
    )
    assert [r["status"] for r in response.json()["data"]] == [200, 404, 200]
    assert File.objects.get(id=a.id).path == "moved"
    assert File.objects.get(id=b.id).status == "deleted"


def test_operations_on_the_same_file_are_refused_as_duplicates(owner: Actor) -> None:
    [file] = seed_files(owner, ["x"])
    response = batch(
        owner, [{"op": "update", "id": file.id, "path": "y"}, {"op": "delete", "id": file.id}]
    )
    assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"
    assert response.json()["error"]["details"] == {
        "operations": {"1": {"id": ["Operation 0 has the same id."]}}
    }


def malformed_batches(file_id: str) -> list[Any]:
    good = {"op": "delete", "id": file_id}
    return [
        None,
        [],
        "delete everything",
        {"op": "delete"},
        [good],  # operations must be under "operations" (sent bare below)
        {"operations": []},
        {"operations": [good] * 1 + [{"op": "delete", "id": f"file_{i}"} for i in range(100)]},
        {"operations": [good, {"op": "purge", "id": "file_x"}]},
        {"operations": [good, {"op": "DELETE", "id": "file_x"}]},
        {"operations": [good, {"id": "file_x"}]},
        {"operations": [good, {"op": "update"}]},
        {"operations": [good, {"op": "update", "id": None, "path": "x"}]},
        {"operations": [good, {"op": "update", "id": 12, "path": "x"}]},
        {"operations": [good, {"op": "update", "id": "x" * 101, "path": "x"}]},
        {"operations": [good, {"op": "update", "id": {"$ne": None}, "path": "x"}]},
        {"operations": [good, {"op": "update", "id": "file_y"}]},  # no change (PATCH {})
        {"operations": [good, {"op": "update", "id": "file_y", "filename": "a/b"}]},
        {"operations": [good, {"op": "update", "id": "file_y", "path": "../etc"}]},
        {"operations": [good, {"op": "update", "id": "file_y", "metadata": [1]}]},
        {"operations": [good, {"op": "delete", "id": "file_y", "path": "x"}]},
        {"operations": [good, {"op": "copy", "id": "file_y", "metadata": {}}]},
        {"operations": [good, {"op": "copy", "id": "file_y", "status": "uploaded"}]},
        {"operations": [good, ["op", "delete"]]},
        {"operations": [good, [[[[]]]]]},
        {"operations": [good, "delete"]},
        {"operations": {"0": good}},
        {"operations": [good], "atomic": True},
        {"operations": [good, {"op": ["delete"], "id": "file_y"}]},
        {"operations": [good, {"op": "update", "id": "file_y", "filename": {"a": {"b": {}}}}]},
    ]


def test_a_malformed_batch_is_one_400_and_nothing_is_done(owner: Actor) -> None:
    [file] = seed_files(owner, ["keep"])
    events_before = Event.objects.count()
    for body in malformed_batches(file.id):
        response = owner.post("/v1/files/batch", body)
        assert response.status_code == 400, (body, response.json())
        assert error_code(response) == "VALIDATION_ERROR", body
        assert "details" in response.json()["error"]
    assert File.objects.get(id=file.id).status == "uploaded"
    assert Event.objects.count() == events_before


def test_a_refusal_names_each_bad_operation_by_its_index(owner: Actor) -> None:
    response = batch(
        owner,
        [
            {"op": "delete", "id": "file_a"},
            {"op": "purge", "id": "file_b"},
            {"op": "update", "id": "file_c", "filename": "a/b"},
        ],
    )
    details = response.json()["error"]["details"]["operations"]
    assert set(details) == {"1", "2"}
    assert "op" in details["1"] and "filename" in details["2"]


def test_100_operations_are_accepted(owner: Actor) -> None:
    files = seed_files(owner, ["x"] * 100)
    response = batch(owner, [{"op": "update", "id": f.id, "path": "y"} for f in files])
    assert response.status_code == 200
    assert [r["status"] for r in response.json()["data"]] == [200] * 100
    assert File.objects.filter(project=owner.project, path="y").count() == 100


def test_a_foreign_tenants_files_are_untouched_and_answered_404(
    owner: Actor, outsider: Actor
) -> None:
    [theirs] = seed_files(outsider, ["theirs"])
    response = batch(
        owner,
        [
            {"op": "delete", "id": theirs.id},
            {"op": "update", "id": theirs.id + "x", "path": "mine"},
            {"op": "copy", "id": seed_files(outsider, ["t"])[0].id},
        ],
    )
    assert [r["status"] for r in response.json()["data"]] == [404, 404, 404]
    assert {r["body"]["error"]["code"] for r in response.json()["data"]} == {"FILE_NOT_FOUND"}
    assert File.objects.get(id=theirs.id).status == "uploaded"
    assert not File.objects.filter(project=owner.project).exists()


def test_the_idempotency_key_replays_the_answer_without_running_it_again(owner: Actor) -> None:
    [file] = seed_files(owner, ["x"])
    operations = [{"op": "copy", "id": file.id, "filename": "copy.txt"}]
    first = batch(owner, operations, **{"Idempotency-Key": "batch-1"})
    again = batch(owner, operations, **{"Idempotency-Key": "batch-1"})
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert File.objects.filter(filename="copy.txt").count() == 1

    other = batch(owner, [{"op": "delete", "id": file.id}], **{"Idempotency-Key": "batch-1"})
    assert other.status_code == 409 and error_code(other) == "IDEMPOTENCY_KEY_REUSED"
    assert File.objects.get(id=file.id).status == "uploaded"
    bad = batch(owner, operations, **{"Idempotency-Key": "\u00e9"})
    assert bad.status_code == 400 and error_code(bad) == "VALIDATION_ERROR"
    # The same key on the upload route is another kind of request: refused, not replayed.
    upload = owner.post(
        "/v1/files/upload",
        {"filename": "a.txt", "contentType": "text/plain", "size": 1},
        **{"Idempotency-Key": "batch-1"},
    )
    assert upload.status_code == 409 and error_code(upload) == "IDEMPOTENCY_KEY_REUSED"


@override_settings(SERVICE_RATE_LIMIT_WRITES_PER_MINUTE=12)
def test_each_operation_counts_against_the_write_budget(owner: Actor) -> None:
    throttling.reset_client()
    files = seed_files(owner, ["x"] * 10)
    operations = [{"op": "update", "id": f.id, "path": "y"} for f in files]
    within_one_window(5)
    assert batch(owner, operations).status_code == 200  # 10 of the 12 writes
    refused = batch(owner, [{"op": "update", "id": f.id, "path": "z"} for f in files[:5]])
    assert refused.status_code == 429 and error_code(refused) == "RATE_LIMITED"
    assert int(refused["Retry-After"]) >= 1
    assert not File.objects.filter(path="z").exists()
