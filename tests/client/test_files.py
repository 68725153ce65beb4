"""Every method of client.files and client.folders, against a real server and store."""

from __future__ import annotations

import io
from datetime import UTC
from pathlib import Path

import pytest
import requests
from storage_client import Client, File

from tests.client.conftest import write_random
from tests.factories import Actor

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_upload_a_path_then_get_download_and_download_url(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "notes.txt"
    source.write_bytes(b"hello, storage\n")
    seen: list[tuple[int, int]] = []

    file = client.files.upload(
        source,
        path="docs/2026",
        metadata={"team": "ops"},
        progress=lambda done, total: seen.append((done, total)),
    )

    assert isinstance(file, File)
    assert file.id.startswith("file_")
    assert (file.filename, file.path, file.size, file.status) == (
        "notes.txt",
        "docs/2026",
        15,
        "uploaded",
    )
    assert file.content_type == "text/plain"  # guessed from the name
    assert file.metadata == {"team": "ops"}
    assert file.version == 1 and file.checksum and file.checksum.startswith("etag:")
    assert file.created_at.tzinfo is not None and file.created_at.utcoffset() == UTC.utcoffset(None)
    assert file.uploaded_at is not None and file.uploaded_at >= file.created_at
    assert seen[-1] == (15, 15)
    assert client.files.get(file.id) == file

    out = tmp_path / "out.txt"
    assert client.files.download(file.id, out) == 15
    assert out.read_bytes() == b"hello, storage\n"
    buffer = io.BytesIO()
    client.files.download(file.id, buffer)
    assert buffer.getvalue() == b"hello, storage\n"
    url = client.files.download_url(file.id, expires_in=120)
    fetched = requests.get(url, timeout=30)
    assert fetched.content == b"hello, storage\n"
    assert "notes.txt" in fetched.headers["Content-Disposition"]


def test_upload_a_file_object_with_explicit_name_type_and_no_content(client: Client) -> None:
    file = client.files.upload(
        io.BytesIO(b"\x00\x01\x02"), filename="blob", content_type="application/x-custom"
    )
    assert (file.filename, file.content_type, file.size, file.path) == (
        "blob",
        "application/x-custom",
        3,
        None,
    )
    unknown = client.files.upload(io.BytesIO(b"abc"), filename="data.zzz-unknown")
    assert unknown.content_type == "application/octet-stream"
    empty = client.files.upload(io.BytesIO(b""), filename="empty.txt")
    assert (empty.size, empty.status) == (0, "uploaded")


def test_upload_reads_a_file_object_from_its_current_position(client: Client) -> None:
    stream = io.BytesIO(b"HEADERbody bytes")
    stream.seek(6)
    file = client.files.upload(stream, filename="tail.bin")
    buffer = io.BytesIO()
    client.files.download(file.id, buffer)
    assert buffer.getvalue() == b"body bytes"


def test_a_file_object_without_a_name_needs_a_filename(client: Client) -> None:
    with pytest.raises(ValueError, match="filename"):
        client.files.upload(io.BytesIO(b"abc"))


def test_the_same_idempotency_key_never_makes_two_files(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "once.txt"
    source.write_bytes(b"once")
    first = client.files.upload(source, idempotency_key="order-42")
    again = client.files.upload(source, idempotency_key="order-42")
    assert again.id == first.id
    assert [f.id for f in client.files.list()] == [first.id]


def test_list_iterates_every_page_and_filters(client: Client, tmp_path: Path) -> None:
    ids = []
    for n in range(7):
        source = tmp_path / f"report-{n}.txt"
        source.write_bytes(b"x" * (n + 1))
        ids.append(client.files.upload(source, path="reports").id)
    client.files.upload(io.BytesIO(b"pic"), filename="cat.png", content_type="image/png")

    listed = list(client.files.list(path="reports", page_size=3))  # 3 pages: 3 + 3 + 1
    assert [f.id for f in listed] == list(reversed(ids))  # newest first
    by_size = list(client.files.list(path="reports", sort_by="size", order="asc", page_size=2))
    assert [f.size for f in by_size] == [1, 2, 3, 4, 5, 6, 7]
    assert [f.filename for f in client.files.list(search="report-3")] == ["report-3.txt"]
    assert [f.filename for f in client.files.list(content_type="image/png")] == ["cat.png"]
    assert [f.filename for f in client.files.list(path="/")] == ["cat.png"]
    assert list(client.files.list(status="pending")) == []


def test_update_copy_replace_delete_restore_and_folders(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "a.txt"
    source.write_bytes(b"version one")
    file = client.files.upload(source, path="inbox", metadata={"k": "v"})

    renamed = client.files.update(file.id, filename="b.txt")
    assert (renamed.filename, renamed.path, renamed.metadata) == ("b.txt", "inbox", {"k": "v"})
    moved = client.files.update(file.id, path="archive/2026", metadata={"k": "w"})
    assert (moved.path, moved.metadata) == ("archive/2026", {"k": "w"})
    rooted = client.files.update(file.id, path=None, metadata=None)
    assert (rooted.path, rooted.metadata) == (None, None)
    with pytest.raises(ValueError):
        client.files.update(file.id)

    copy = client.files.copy(file.id, path="copies", filename="c.txt")
    assert copy.id != file.id and (copy.path, copy.filename, copy.size) == ("copies", "c.txt", 11)
    same_place = client.files.copy(file.id)
    assert (same_place.path, same_place.filename) == (None, "b.txt")

    v2 = tmp_path / "v2.txt"
    v2.write_bytes(b"version two!")
    replaced = client.files.replace(file.id, v2)
    assert (replaced.id, replaced.version, replaced.size) == (file.id, 2, 12)
    buffer = io.BytesIO()
    client.files.download(file.id, buffer)
    assert buffer.getvalue() == b"version two!"
    copied = io.BytesIO()
    client.files.download(copy.id, copied)
    assert copied.getvalue() == b"version one"  # the copy keeps the bytes it shared

    assert [(f.path, f.file_count) for f in client.folders.list()] == [("copies", 1)]
    client.files.update(copy.id, path="copies/deep")
    assert [f.path for f in client.folders.list(parent="copies")] == ["copies/deep"]

    client.files.delete(file.id)
    trash = list(client.files.list(status="deleted"))
    assert [f.id for f in trash] == [file.id] and trash[0].deleted_at is not None
    restored = client.files.restore(file.id)
    assert (restored.status, restored.version) == ("uploaded", 2)


def test_files_of_another_project_are_invisible(
    client: Client, make_client: object, tmp_path: Path
) -> None:
    from storage_client import NotFoundError

    from tests.factories import make_actor

    source = tmp_path / "mine.txt"
    source.write_bytes(b"mine")
    mine = client.files.upload(source)
    other: Actor = make_actor("client-outsider", organization="globex")
    theirs = make_client(other)  # type: ignore[operator]
    with pytest.raises(NotFoundError):
        theirs.files.get(mine.id)
    assert list(theirs.files.list()) == []


def test_a_larger_single_upload_streams_with_progress(client: Client, tmp_path: Path) -> None:
    source = tmp_path / "five.bin"
    data = write_random(source, 5 * 1024 * 1024 + 7)
    seen: list[int] = []
    file = client.files.upload(source, progress=lambda done, total: seen.append(done))
    assert file.size == len(data)
    assert seen == sorted(seen) and seen[-1] == len(data) and len(seen) >= 5
    out = tmp_path / "back.bin"
    client.files.download(file.id, out, progress=lambda done, total: None)
    assert out.read_bytes() == data
