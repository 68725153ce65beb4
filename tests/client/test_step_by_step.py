"""The upload steps one by one, as a server does for a browser (the package README's Uppy
guide): the bytes go from "the browser" (plain HTTP PUTs here) straight to the store."""

from __future__ import annotations

import io
import os

import pytest
import requests
from storage_client import Client, ConflictError, MultipartSession, PresignedUpload

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

MIB = 1024 * 1024


def test_single_upload_in_two_steps(client: Client) -> None:
    data = b"from a browser"
    file, target = client.files.start_upload(
        filename="b.txt", content_type="text/plain", size=len(data), path="web"
    )
    assert isinstance(target, PresignedUpload) and file.status == "pending"
    assert target.method == "PUT" and target.headers["content-type"] == "text/plain"

    put = requests.put(target.url, data=data, headers=target.headers, timeout=30)
    assert put.status_code == 200

    done = client.files.complete(file.id)
    assert (done.id, done.status, done.size, done.path) == (file.id, "uploaded", 14, "web")
    buffer = io.BytesIO()
    client.files.download(file.id, buffer)
    assert buffer.getvalue() == data


def test_multipart_upload_step_by_step(client: Client) -> None:
    size = 8 * MIB + 10
    data = os.urandom(size)
    file, session = client.uploads.create(
        filename="big.bin",
        content_type="application/octet-stream",
        size=size,
        idempotency_key="browser-upload-1",
    )
    assert isinstance(session, MultipartSession)
    assert (session.file_id, session.part_count, session.part_size) == (file.id, 2, 8 * MIB)
    assert [p.part_number for p in session.parts] == [1, 2]
    again_file, again = client.uploads.create(
        filename="big.bin",
        content_type="application/octet-stream",
        size=size,
        idempotency_key="browser-upload-1",
    )
    assert (again_file.id, again.id) == (file.id, session.id)

    first = requests.put(session.parts[0].url, data=data[: 8 * MIB], timeout=60)
    assert [p.part_number for p in client.uploads.parts(session.id)] == [1]
    [fresh] = client.uploads.sign_parts(session.id, [2])
    second = requests.put(fresh.url, data=data[8 * MIB :], timeout=60)
    etags = {1: first.headers["ETag"], 2: second.headers["ETag"]}

    done = client.uploads.complete(session.id, etags)
    assert (done.status, done.size) == ("uploaded", size)
    # A retry of a complete whose answer was lost: with file_id, the uploaded file.
    assert client.uploads.complete(session.id, etags, file_id=file.id).id == file.id
    with pytest.raises(ConflictError):
        client.uploads.complete(session.id, etags)


def test_abort(client: Client) -> None:
    file, session = client.uploads.create(
        filename="gone.bin", content_type="application/octet-stream", size=10
    )
    client.uploads.abort(session.id)
    client.uploads.abort(session.id)  # again: still a success
    assert client.files.get(file.id).status == "failed"
