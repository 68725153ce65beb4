"""One file, one object: every endpoint that answers a file answers the same object as the
single-file read and the list, field by field, metadata included."""

from __future__ import annotations

from typing import Any

import pytest

from files import selectors
from files.models import File
from files.serializers import file_json
from storage_service.errors import FileNotFound
from tests.factories import Actor, pdf_bytes, png_bytes
from tests.helpers import error_code, start_upload
from tests.multipart import complete, put_all, start_multipart
from tests.storage import put_to

# Nested objects, unicode (keys and values), numbers of each JSON kind, null, booleans, arrays.
METADATA: dict[str, Any] = {
    "album": "été à Kraków 🏖",
    "größe": {"w": 1920, "h": 1080, "ratio": 1.7778, "tags": ["a", "ü", None]},
    "count": 0,
    "negative": -42,
    "big": 2**53,
    "nothing": None,
    "flags": [True, False],
    "nested": {"deeper": {"deepest": {"x": [1, {"y": "z"}]}}},
}


def read_back(actor: Actor, file_id: str, *, deleted: bool = False) -> dict[str, Any]:
    """The file as GET and as the list show it; the two must be equal."""
    listing = actor.get("/v1/files", {"status": "deleted"} if deleted else {"limit": 100})
    assert listing.status_code == 200, listing.json()
    listed = [item for item in listing.json()["data"] if item["id"] == file_id]
    assert len(listed) == 1, file_id
    if deleted:
        with pytest.raises(FileNotFound):
            selectors.file_get(tenant=actor.tenant, file_id=file_id)
        return dict(listed[0])
    read, orm = (
        selectors.file_get(tenant=actor.tenant, file_id=file_id),
        File.objects.get(id=file_id),
    )
    assert_same(dict(file_json(read)), dict(file_json(orm)), "file_get", "ORM")
    # Every field of the instance the services get, not only those the API shows.
    assert_same(
        {field.attname: getattr(read, field.attname) for field in File._meta.concrete_fields},
        {field.attname: getattr(orm, field.attname) for field in File._meta.concrete_fields},
        "file_get",
        "ORM",
    )
    got = actor.get(f"/v1/files/{file_id}")
    assert got.status_code == 200, got.json()
    assert_same(got.json()["data"], listed[0], "GET", "list")
    return dict(got.json()["data"])


def assert_same(
    left: dict[str, Any], right: dict[str, Any], left_name: str, right_name: str
) -> None:
    assert set(left) == set(right), (left_name, right_name, set(left) ^ set(right))
    for field in left:
        assert left[field] == right[field], (
            field,
            left_name,
            left[field],
            right_name,
            right[field],
        )
        # Same JSON types too (1 == 1.0 == True in Python).
        assert type(left[field]) is type(right[field]), (field, left_name, right_name)


def test_every_read_path_answers_the_same_file_object(owner: Actor) -> None:
    data = png_bytes()
    started = start_upload(owner, data, path="albums/2026", metadata=METADATA)
    file_id = started["file"]["id"]
    assert started["file"]["metadata"] == METADATA
    assert_same(started["file"], read_back(owner, file_id), "upload", "GET")

    assert put_to(started["upload"], data).status_code == 200
    assert owner.post(f"/v1/files/{file_id}/complete").status_code == 200
    uploaded = read_back(owner, file_id)
    assert uploaded["metadata"] == METADATA and uploaded["status"] == "uploaded"

    patched = owner.patch(f"/v1/files/{file_id}", {"metadata": {**METADATA, "edited": "ja"}})
    assert patched.status_code == 200, patched.json()
    assert_same(patched.json(), read_back(owner, file_id), "PATCH", "GET")
    assert patched.json()["metadata"] == {**METADATA, "edited": "ja"}

    copied = owner.post(f"/v1/files/{file_id}/copy", {"path": "copies"})
    assert copied.status_code == 201, copied.json()
    assert_same(copied.json(), read_back(owner, copied.json()["id"]), "copy", "GET")
    assert copied.json()["metadata"] == {**METADATA, "edited": "ja"}

    replace = owner.post(
        f"/v1/files/{file_id}/replace", {"contentType": "image/png", "size": len(data)}
    )
    assert replace.status_code == 200, replace.json()
    assert_same(replace.json()["file"], read_back(owner, file_id), "replace", "GET")
    assert put_to(replace.json()["upload"], data).status_code == 200
    replaced = owner.post(f"/v1/files/{file_id}/replace/complete")
    assert replaced.status_code == 200, replaced.json()
    assert replaced.json()["version"] == 2
    assert_same(replaced.json(), read_back(owner, file_id), "replace/complete", "GET")

    assert owner.delete(f"/v1/files/{file_id}").status_code == 200
    trashed = read_back(owner, file_id, deleted=True)
    assert trashed["metadata"] == {**METADATA, "edited": "ja"} and "deletedAt" in trashed
    restored = owner.post(f"/v1/files/{file_id}/restore")
    assert restored.status_code == 200, restored.json()
    assert_same(restored.json(), read_back(owner, file_id), "restore", "GET")


def test_a_multipart_file_reads_back_the_same_from_every_path(owner: Actor) -> None:
    payload = b"multipart bytes"
    started = start_multipart(owner, len(payload), metadata=METADATA, path="big")
    file_id = started["file"]["id"]
    assert_same(started["file"], read_back(owner, file_id), "multipart create", "GET")

    parts = put_all(started["upload"], payload)
    completed = complete(owner, started["upload"]["id"], parts)
    assert completed.status_code == 200, completed.json()
    assert completed.json()["metadata"] == METADATA
    assert_same(completed.json(), read_back(owner, file_id), "multipart complete", "GET")


def test_a_failed_file_reads_back_the_same_from_every_path(owner: Actor) -> None:
    wrong = pdf_bytes()
    started = start_upload(owner, wrong, metadata=METADATA)  # declared image/png
    assert put_to(started["upload"], wrong).status_code == 200
    refused = owner.post(f"/v1/files/{started['file']['id']}/complete")
    assert refused.status_code == 409 and error_code(refused) == "CONTENT_TYPE_MISMATCH"
    failed = read_back(owner, started["file"]["id"])
    assert failed["status"] == "failed" and failed["metadata"] == METADATA
