"""Hostile sizes: the request-body cap, the JSON depth cap, the metadata cap and the byte
length of values that land in an index: each a clean 4xx, before the server does the work."""

from __future__ import annotations

import json
import random
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest
import requests

from tests.factories import Actor
from tests.security.input.hostile import (
    MIB,
    auth,
    document,
    post,
    refused,
    request_schema,
    send,
    upload_body,
    uploaded_file,
)

pytestmark = pytest.mark.django_db(transaction=True)

# --- The request-body cap ---------------------------------------------------------------------


def test_a_body_over_the_cap_is_refused_with_413_before_it_is_read(api: str, actor: Actor) -> None:
    # Declared by Content-Length: 2 MiB of otherwise valid JSON.
    big = json.dumps(upload_body(metadata={"k": "x" * (2 * MIB)})).encode()
    details = refused(post(api, actor, "/v1/files/upload", big), 413, "PAYLOAD_TOO_LARGE")
    assert details == {"maxBytes": MIB}

    # Declared as 1 GiB and never sent: the answer comes at once, so nothing waited for (or
    # read) the body.
    host = urlparse(api)
    assert host.port is not None
    with socket.create_connection((host.hostname, host.port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(
            b"POST /v1/files/upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {actor.key.raw_key}\r\n".encode()
            + f"Content-Length: {1024 * MIB}\r\n\r\n{{".encode()
        )
        received = b""
        while piece := sock.recv(65536):  # the server closes the connection after it
            received += piece
        assert time.monotonic() - started < 5
    answer = received.decode("latin-1")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert '"PAYLOAD_TOO_LARGE"' in answer
    assert "\r\nconnection: close\r\n" in answer.lower()  # header names are case-blind

    # Of unknown length (chunked): counted while read, refused past the cap.
    def pieces(total: int) -> Iterator[bytes]:
        yield b'{"filename":"a","contentType":"text/plain","size":1,"metadata":{"k":"'
        for _ in range(total // 65536):
            yield b"x" * 65536
        yield b'"}}'

    response = requests.post(
        f"{api}/v1/files/upload",
        data=pieces(3 * MIB),
        headers=auth(actor, **{"Content-Type": "application/json"}),
        timeout=60,
    )
    refused(response, 413, "PAYLOAD_TOO_LARGE")

    # A chunked body within the cap is read whole and works like any other.
    small = json.dumps(upload_body(filename="chunked.txt")).encode()
    response = requests.post(
        f"{api}/v1/files/upload",
        data=iter([small[:10], small[10:]]),
        headers=auth(actor, **{"Content-Type": "application/json"}),
        timeout=60,
    )
    assert response.status_code == 201, response.text
    assert response.json()["file"]["filename"] == "chunked.txt"

    # The largest legitimate body, a complete listing 10,000 parts as a client sends it
    # (requests' json=, about 700 KB), is under the cap: it reaches the view.
    parts = [{"partNumber": n, "etag": '"' + "a" * 32 + '-10000"'} for n in range(1, 10_001)]
    response = post(api, actor, "/v1/uploads/multipart/upl_unknown/complete", {"parts": parts})
    refused(response, 404, "UPLOAD_NOT_FOUND")

    # The document says so, on every operation with a body.
    upload_op = document(api)["paths"]["/v1/files/upload"]["post"]
    assert "PAYLOAD_TOO_LARGE" in json.dumps(upload_op["responses"]["413"])


# --- The JSON depth cap -----------------------------------------------------------------------


def test_deeply_nested_json_is_a_clean_400(api: str, actor: Actor) -> None:
    deep = b"[" * 3000 + b"]" * 3000  # 6 KB: reached the parser's recursion limit (a 500)
    refused(post(api, actor, "/v1/files/upload", deep))
    # Just past the cap, inside an otherwise valid body.
    nested: Any = 1
    for _ in range(33):
        nested = [nested]
    response = post(api, actor, "/v1/files/upload", upload_body(metadata={"deep": nested}))
    refused(response)
    assert "more than 32 deep" in response.json()["error"]["message"]


# --- The metadata cap: size, depth, keys ------------------------------------------------------


def test_metadata_is_capped_in_bytes_depth_and_keys(api: str, actor: Actor) -> None:
    nine_deep: Any = {}
    for _ in range(8):
        nine_deep = {"a": nine_deep}  # with the metadata object itself: 9 levels
    for metadata in [
        nine_deep,
        {f"k{i}": i for i in range(65)},
        {"k": "é" * 4096},  # 8,192 bytes of text, plus the key: over 8,192 bytes
    ]:
        details = refused(post(api, actor, "/v1/files/upload", upload_body(metadata=metadata)))
        assert "metadata" in details
    eight_deep = nine_deep["a"]
    ok = post(api, actor, "/v1/files/upload", upload_body(metadata=eight_deep))
    assert ok.status_code == 201, ok.text

    schema = request_schema(api, "UploadRequest")["properties"]["metadata"]
    assert schema["maxProperties"] == 64
    assert schema["x-maxDepth"] == 8 and schema["x-maxSerializedBytes"] == 8192
    assert "SERVICE_MAX_METADATA_DEPTH" in schema["description"]


# --- Byte-length limits where a value lands in an index ---------------------------------------


def _four_byte_text(length: int) -> str:
    # Random characters from the supplementary planes (4 bytes each in UTF-8), so the index
    # entry cannot be compressed below the B-tree's limit.
    rng = random.Random(11)
    return "".join(chr(rng.randrange(0x20000, 0x2A6D0)) for _ in range(length))


def test_a_path_too_long_in_bytes_is_a_400_not_a_false_503(api: str, actor: Actor) -> None:
    path = _four_byte_text(1024)  # within 1,024 characters, 4,096 bytes
    response = post(api, actor, "/v1/files/upload", upload_body(path=path))
    assert "Retry-After" not in response.headers
    assert refused(response)["path"] == ["At most 2048 bytes as UTF-8."]

    file = uploaded_file(api, actor)
    for method, route, body in [
        ("PATCH", f"/v1/files/{file['id']}", {"path": path}),
        ("POST", f"/v1/files/{file['id']}/copy", {"path": path}),
    ]:
        refused(send(method, api, actor, route, body))
    listed = requests.get(f"{api}/v1/files", params={"path": path}, headers=auth(actor), timeout=30)
    refused(listed)
    # 512 four-byte characters (2,048 bytes) fit, in the row and in every index.
    fits = post(api, actor, "/v1/files/upload", upload_body(path=_four_byte_text(512)))
    assert fits.status_code == 201, fits.text
    # The longest filename (255 characters) cannot exceed its byte limit.
    name = post(api, actor, "/v1/files/upload", upload_body(filename=_four_byte_text(255)))
    assert name.status_code == 201, name.text
    # Over-long everything else is refused by its own rule.
    for body in [
        upload_body(contentType="text/plain; a=" + "x" * 300),
        upload_body(filename="x" * 256),
        upload_body(path="x" * 1025),
    ]:
        refused(post(api, actor, "/v1/files/upload", body))
    refused(
        post(api, actor, "/v1/files/upload", upload_body(), **{"Idempotency-Key": "k" * 256}),
    )
    refused(post(api, actor, "/v1/webhooks", {"url": "https://example.com/" + "x" * 2100}))

    schemas = request_schema(api, "UploadRequest")["properties"]
    assert schemas["path"]["x-maxBytes"] == 2048 and "2048 bytes" in schemas["path"]["description"]
    assert schemas["filename"]["x-maxBytes"] == 1024
