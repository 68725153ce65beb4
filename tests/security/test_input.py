"""Hostile input over real HTTP: an API server with DEBUG off, as `make run` starts it,
with the real PostgreSQL and SeaweedFS behind it.

Each test sends what the worst client could send and checks what that client sees: a clear 4xx
with the contract's code, never a 500 from the parser, never a false 503 that invites retries
for ever, and nothing the uploader chose served back to the people who download.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest
import requests
from django.db import connection

from tests.factories import Actor, make_actor
from tests.servers import serve_api

pytestmark = pytest.mark.django_db(transaction=True)

MIB = 1024 * 1024
CRLF_TYPE = 'text/plain; a="x\r\nX-Injected: yes"'


@pytest.fixture
def api(api_base: str) -> str:
    return api_base


@pytest.fixture
def actor() -> Actor:
    return make_actor("hostile")


def auth(actor: Actor, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {actor.key.raw_key}", **extra}


def send(
    method: str, api: str, actor: Actor, path: str, body: Any = None, **headers: str
) -> requests.Response:
    data = None if body is None else body if isinstance(body, bytes) else json.dumps(body)
    return requests.request(
        method,
        f"{api}{path}",
        data=data,
        headers=auth(actor, **{"Content-Type": "application/json", **headers}),
        timeout=60,
    )


def post(api: str, actor: Actor, path: str, body: Any, **headers: str) -> requests.Response:
    return send("POST", api, actor, path, body, **headers)


def upload_body(**extra: Any) -> dict[str, Any]:
    return {"filename": "a.txt", "contentType": "text/plain", "size": 3, **extra}


def refused(response: requests.Response, status: int = 400, code: str = "VALIDATION_ERROR") -> Any:
    """The one error body, with ``status`` and ``code``; returns its ``details``."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    error = response.json()["error"]
    assert error["code"] == code, error
    return error.get("details", {})


def uploaded_file(api: str, actor: Actor, data: bytes = b"abc", **extra: Any) -> dict[str, Any]:
    started = post(api, actor, "/v1/files/upload", upload_body(size=len(data), **extra))
    assert started.status_code == 201, started.text
    upload = started.json()["upload"]
    put = requests.put(upload["url"], data=data, headers=upload["headers"], timeout=30)
    assert put.status_code == 200, put.text
    done = post(api, actor, f"/v1/files/{started.json()['file']['id']}/complete", {})
    assert done.status_code == 200, done.text
    return dict(started.json()["file"])


def document(api: str) -> dict[str, Any]:
    return dict(requests.get(f"{api}/v1/openapi.json", timeout=30).json())


def request_schema(api: str, name: str) -> dict[str, Any]:
    return dict(document(api)["components"]["schemas"][name])


# --- 1. The request-body cap ------------------------------------------------------------------


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


# --- 2. The JSON depth cap --------------------------------------------------------------------


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


# --- 3. The metadata cap: size, depth, keys ---------------------------------------------------


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


# --- 4. Byte-length limits where a value lands in an index ------------------------------------


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


# --- 5. Only connection-class database errors answer 503 --------------------------------------

_TRIGGER = """
CREATE OR REPLACE FUNCTION input_test_raise() RETURNS trigger AS $$
BEGIN
  IF NEW.filename LIKE 'raise-%' THEN
    RAISE EXCEPTION 'forced by the test' USING ERRCODE = substr(NEW.filename, 7, 5);
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER input_test_raise BEFORE INSERT ON files_file
  FOR EACH ROW EXECUTE FUNCTION input_test_raise();
"""


@pytest.fixture
def raising_trigger() -> Iterator[None]:
    """Inserting a file named ``raise-<SQLSTATE>`` makes PostgreSQL raise that error."""
    with connection.cursor() as cursor:
        cursor.execute(_TRIGGER)
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER IF EXISTS input_test_raise ON files_file")
            cursor.execute("DROP FUNCTION IF EXISTS input_test_raise()")


def test_a_database_error_that_is_not_about_the_connection_is_a_500_with_the_request_id(
    actor: Actor, raising_trigger: None, capfd: pytest.CaptureFixture[str]
) -> None:
    with serve_api() as api:  # its own, so that its log is this test's captured stderr
        _database_errors(api, actor, capfd)


def _database_errors(api: str, actor: Actor, capfd: pytest.CaptureFixture[str]) -> None:
    # 54000 program_limit_exceeded (what an over-long index entry raises): an OperationalError
    # that no retry cures. It was a 503 with Retry-After, so clients retried for ever.
    for sqlstate in ["54000", "22001", "42703"]:
        response = post(api, actor, "/v1/files/upload", upload_body(filename=f"raise-{sqlstate}"))
        assert "Retry-After" not in response.headers
        details = refused(response, 500, "INTERNAL_ERROR")
        request_id = response.headers["X-Request-Id"]
        assert details == {"requestId": request_id}
        assert request_id in response.json()["error"]["message"]
        time.sleep(0.2)
        logged = capfd.readouterr().err
        assert f"(request {request_id})" in logged and '"sqlstate": "' + sqlstate in logged

    # Connection-class errors and lost races stay retryable: 503 with Retry-After.
    for sqlstate in ["57P01", "53300", "40001", "40P01", "08006"]:
        response = post(api, actor, "/v1/files/upload", upload_body(filename=f"raise-{sqlstate}"))
        refused(response, 503, "SERVICE_UNAVAILABLE")
        assert response.headers["Retry-After"] == "1"


# --- 6. Filenames free of bidi-override and zero-width characters -----------------------------

INVISIBLE = [
    "\u202e",
    "\u202a",
    "\u202d",
    "\u2066",
    "\u2069",
    "\u200b",
    "\u200d",
    "\u200e",
    "\u200f",
    "\ufeff",
    "\u2060",
    "\u061c",
]


def test_filenames_and_paths_refuse_bidi_and_zero_width_characters(api: str, actor: Actor) -> None:
    file = uploaded_file(api, actor)
    for char in INVISIBLE:
        name = f"invoice{char}gpj.exe"
        refused(post(api, actor, "/v1/files/upload", upload_body(filename=name)))
        refused(post(api, actor, "/v1/files/upload", upload_body(path=f"a/b{char}c")))
        refused(send("PATCH", api, actor, f"/v1/files/{file['id']}", {"filename": name}))
        refused(post(api, actor, f"/v1/files/{file['id']}/copy", {"filename": name}))
    # Ordinary non-ASCII names are fine.
    fine = post(api, actor, "/v1/files/upload", upload_body(filename="résumé 履歴書 😀.pdf"))
    assert fine.status_code == 201, fine.text

    pattern = request_schema(api, "UploadRequest")["properties"]["filename"]["pattern"]
    for char in INVISIBLE:
        assert not re.fullmatch(pattern, f"a{char}b")
    assert re.fullmatch(pattern, "résumé 履歴書 😀.pdf")


def test_paths_built_to_make_the_pattern_backtrack_are_refused_at_once(
    api: str, actor: Actor
) -> None:
    """Segments like ".ab" in a path that fails only at its end (a trailing space, a last
    ".." segment): a segment pattern that matched ".ab" in two ways tried 2**n splits before
    refusing it, hours of a worker's CPU at 40 segments (160 characters). Each entry point
    answers 400 within the client's 10 s; the segments alone are a valid folder."""
    for unit, tail in itertools.product([".ab", ". ab", "..ab", ".a b"], [" ", "/.."]):
        valid = "/".join([unit] * 60)
        hostile = valid + tail
        for response in [
            requests.get(
                f"{api}/v1/files", params={"path": hostile}, headers=auth(actor), timeout=10
            ),
            requests.post(
                f"{api}/v1/files/upload",
                json=upload_body(path=hostile),
                headers=auth(actor),
                timeout=10,
            ),
            requests.post(
                f"{api}/v1/folders/move",
                json={"from": hostile, "to": "elsewhere"},
                headers=auth(actor),
                timeout=10,
            ),
        ]:
            refused(response)
        fine = requests.post(
            f"{api}/v1/files/upload",
            json=upload_body(path=valid),
            headers=auth(actor),
            timeout=10,
        )
        assert fine.status_code == 201, fine.text
        assert fine.json()["file"]["path"] == valid
    # The document's pattern, which generated clients and fuzzers match with, is the same one.
    pattern = request_schema(api, "UploadRequest")["properties"]["path"]["pattern"]
    assert re.fullmatch(pattern, "/".join([".ab"] * 60))
    assert not re.fullmatch(pattern, "/".join([".ab"] * 60) + " ")


# --- 7. Header injection through contentType --------------------------------------------------


def test_content_types_with_cr_or_lf_are_refused_at_every_entry_point(
    api: str, actor: Actor
) -> None:
    file = uploaded_file(api, actor)
    for value in [CRLF_TYPE, 'text/plain; a="x\nb"', 'text/plain; a="x\rb"', "text/pl\r\nain"]:
        refused(post(api, actor, "/v1/files/upload", upload_body(contentType=value)))
        refused(
            post(
                api,
                actor,
                "/v1/uploads/multipart",
                {"filename": "a", "contentType": value, "size": 6 * MIB},
            )
        )
        refused(
            post(api, actor, f"/v1/files/{file['id']}/replace", {"contentType": value, "size": 3})
        )
    # Whitespace around the type (CR and LF included) is dropped, never signed.
    padded = post(api, actor, "/v1/files/upload", upload_body(contentType="\r\ntext/plain\r\n"))
    assert padded.status_code == 201, padded.text
    assert padded.json()["upload"]["headers"]["content-type"] == "text/plain"
    # A quoted parameter that is a valid header value is signed as given, and sendable.
    quoted = 'text/plain; charset="utf-8"; name="a b;c"'
    started = post(api, actor, "/v1/files/upload", upload_body(contentType=quoted))
    assert started.status_code == 201, started.text
    upload = started.json()["upload"]
    for value in upload["headers"].values():
        assert "\r" not in value and "\n" not in value
        value.encode("latin-1")
    put = requests.put(upload["url"], data=b"abc", headers=upload["headers"], timeout=30)
    assert put.status_code == 200, put.text


# --- 8. The uploader does not choose the downloader's headers ---------------------------------

UPLOADER_HEADERS = {
    "Content-Encoding": "gzip",
    "Cache-Control": "public, max-age=31536000, immutable",
    "Content-Language": "xx-evil",
    "Content-Disposition": "inline",
    "Expires": "Wed, 21 Oct 2037 07:28:00 GMT",
}


def _download(api: str, actor: Actor, file_id: str) -> requests.Response:
    link = post(api, actor, f"/v1/files/{file_id}/download-url", {})
    assert link.status_code == 200, link.text
    response = requests.get(link.json()["url"], headers={"Accept-Encoding": "identity"}, timeout=30)
    assert response.status_code == 200
    return response


def _assert_service_headers(response: requests.Response, data: bytes) -> None:
    assert response.content == data
    assert response.headers["Content-Encoding"] == "identity"
    assert response.headers["Cache-Control"] == "private"
    assert response.headers["Content-Language"] == "und"
    assert response.headers["Content-Disposition"].startswith("attachment;")
    assert "2037" not in response.headers.get("Expires", "")
    assert response.headers["Content-Type"] == "text/plain"


def test_headers_the_uploader_sent_are_never_served_to_downloaders(api: str, actor: Actor) -> None:
    data = b"abc"
    started = post(api, actor, "/v1/files/upload", upload_body())
    upload = started.json()["upload"]
    put = requests.put(
        upload["url"], data=data, headers={**upload["headers"], **UPLOADER_HEADERS}, timeout=30
    )
    assert put.status_code == 200, put.text
    done = post(api, actor, f"/v1/files/{started.json()['file']['id']}/complete", {})
    assert done.status_code == 200, done.text
    _assert_service_headers(_download(api, actor, started.json()["file"]["id"]), data)

    # x-amz-* headers (metadata, a website redirect, an ACL) are not signed, so the store
    # refuses the PUT outright.
    for name, value in [
        ("x-amz-meta-evil", "1"),
        ("x-amz-website-redirect-location", "/evil"),
        ("x-amz-acl", "public-read"),
    ]:
        started = post(api, actor, "/v1/files/upload", upload_body())
        upload = started.json()["upload"]
        put = requests.put(
            upload["url"], data=data, headers={**upload["headers"], name: value}, timeout=30
        )
        assert put.status_code == 403, (name, put.status_code)

    # Multipart: headers sent with the parts do not reach the downloads either.
    size = 6 * MIB
    blob = random.Random(8).randbytes(size)
    start = post(
        api,
        actor,
        "/v1/uploads/multipart",
        {"filename": "m.txt", "contentType": "text/plain", "size": size},
    )
    assert start.status_code == 201, start.text
    session = start.json()["data"]["upload"]
    first = session["parts"][0]
    refused_part = requests.put(
        first["url"], data=blob[: session["partSize"]], headers={"x-amz-meta-evil": "1"}, timeout=60
    )
    assert refused_part.status_code == 403
    parts = []
    for part in session["parts"]:
        number, part_size = part["partNumber"], session["partSize"]
        piece = blob[(number - 1) * part_size : number * part_size]
        response = requests.put(part["url"], data=piece, headers=UPLOADER_HEADERS, timeout=60)
        assert response.status_code == 200, response.text
        parts.append({"partNumber": number, "etag": response.headers["ETag"]})
    done = post(api, actor, f"/v1/uploads/multipart/{session['id']}/complete", {"parts": parts})
    assert done.status_code == 200, done.text
    _assert_service_headers(_download(api, actor, start.json()["data"]["file"]["id"]), blob)


# --- 9. Everything else the worst client could send -------------------------------------------


def test_odd_bodies_queries_and_paths_get_a_clear_4xx(api: str, actor: Actor) -> None:
    file = uploaded_file(api, actor)
    raw_bodies = [
        b'{"filename":"a","contentType":"text/plain","size":1e400}',
        b'{"filename":"a","contentType":"text/plain","size":3,"metadata":{"n":1e400}}',
        b'{"filename":"a","contentType":"text/plain","size":3,"metadata":{"n":NaN}}',
        b'{"filename":"a","contentType":"text/plain","size":3,"metadata":{"n":-Infinity}}',
        b'{"filename":"a","contentType":"text/plain","size":' + b"9" * 5000 + b"}",
        b'{"filename":"a","filename":"b","contentType":"text/plain","size":3}',
        b'{"filename":"a","contentType":"text/plain","size":3,"metadata":{"k":1,"k":2}}',
        b'{"filename":"a\\u0000","contentType":"text/plain","size":3}',
        b'{"filename":"a","contentType":"text/plain","size":3,"metadata":{"k":"\\ud800"}}',
        b'{"filename":"a","contentType":"text/plain","size":3,"metadata":{"\\u0000":1}}',
        b'{"filename":"\xff\xfe","contentType":"text/plain","size":3}',
        b'{"filename":"a","contentType":"text/plain","size":-0}',
        b'{"filename":"a","contentType":"text/plain","size":3.5}',
        b'{"filename":"a","contentType":"text/plain","size":"3"}',
        b'{"filename":"a","contentType":"text/plain","size":true}',
        b"[]",
        b"null",
        b'"x"',
        b"",
        b"{",
        b'{"filename":"a","contentType":"text/plain","size":3}garbage',
    ]
    for body in raw_bodies:
        response = post(api, actor, "/v1/files/upload", body)
        if body.endswith(b'"size":-0}'):
            # -0 is 0, a valid size: the file is created, no error.
            assert response.status_code == 201, response.text
            continue
        refused(response)
    # Control characters in every string field.
    for char in ["\x00", "\x01", "\x1b", "\x7f", "\n"]:
        for fields in [
            upload_body(filename=f"a{char}b"),
            upload_body(path=f"a{char}b"),
            upload_body(contentType=f"text/pl{char}ain"),
            upload_body(contentType=f'text/plain; a="{char}"'),
        ]:
            refused(post(api, actor, "/v1/files/upload", fields))
    refused(post(api, actor, "/v1/webhooks", {"url": "https://example.com/\x00"}))
    refused(post(api, actor, "/v1/webhooks", {"url": "https://example.com/", "events": ["\x00"]}))
    # The wrong Content-Type of the request.
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/xml",
    ]:
        response = post(
            api,
            actor,
            "/v1/files/upload",
            json.dumps(upload_body()).encode(),
            **{"Content-Type": content_type},
        )
        refused(response, 415)
    # A JSON body in another charset than UTF-8.
    refused(
        post(
            api,
            actor,
            "/v1/files/upload",
            json.dumps(upload_body()).encode("utf-16"),
            **{"Content-Type": "application/json; charset=utf-16"},
        )
    )
    # Query parameters: NUL, control characters, bytes that are not UTF-8, huge values (longer
    # than any parameter allows, yet within the server's 64 KiB URI).
    for name in ["search", "path", "contentType", "cursor", "sortBy", "status", "limit", "order"]:
        for value in ["%00", "a%00b", "%1b", "%ff%fe", "%ed%a0%80", "x" * 60_000]:
            response = requests.get(
                f"{api}/v1/files?{name}={value}", headers=auth(actor), timeout=30
            )
            refused(response)
    # A URI past 64 KiB is not one the server parses (the longest valid one is about 24 KiB):
    # its own 414, and the next request is served.
    response = requests.get(
        f"{api}/v1/files?search={'x' * 100_000}", headers=auth(actor), timeout=30
    )
    assert response.status_code == 414
    assert requests.get(f"{api}/v1/files", headers=auth(actor), timeout=30).status_code == 200
    # Bytes that are not UTF-8 are refused even in a parameter the operation does not read.
    refused(requests.get(f"{api}/v1/files?q=%ff", headers=auth(actor), timeout=30))
    # Bytes that are not UTF-8, NUL and huge ids in the URL path: not found, never a 500.
    for route in ["%ff%fe", "%00", "file_" + "x" * 5000, "..%2f..%2fadmin"]:
        response = requests.get(f"{api}/v1/files/{route}", headers=auth(actor), timeout=30)
        assert response.status_code == 404, (route, response.status_code)
        assert response.json()["error"]["code"] in {"FILE_NOT_FOUND", "NOT_FOUND"}
    # The same body rules on every operation that takes one.
    for route, raw in [
        (f"/v1/files/{file['id']}/download-url", b'{"expiresInSeconds":1e400}'),
        (f"/v1/files/{file['id']}/download-url", b'{"expiresInSeconds":60,"expiresInSeconds":61}'),
        (f"/v1/files/{file['id']}/copy", b'{"filename":"a","filename":"b"}'),
        ("/v1/webhooks", b'{"url":"https://example.com/","url":"https://example.org/"}'),
        ("/v1/uploads/multipart", b'{"filename":"a","contentType":"a/b","size":NaN}'),
    ]:
        refused(post(api, actor, route, raw))
    refused(send("PATCH", api, actor, f"/v1/files/{file['id']}", b'{"metadata":{"a":1,"a":2}}'))
    # Headers: a key that is not a key, an odd request id, a non-ASCII idempotency key.
    for token in ["\xff\xfe", "sk_test_" + "x" * 5000, ""]:
        response = requests.get(
            f"{api}/v1/files", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        refused(response, 401, "UNAUTHENTICATED")
    # A control character in a header value is not HTTP: the server refuses the request (its own
    # 400) before the service sees it.
    response = requests.get(
        f"{api}/v1/files", headers={"Authorization": "Bearer sk_test_\x01"}, timeout=30
    )
    assert response.status_code == 400
    odd_id = requests.get(
        f"{api}/v1/files", headers=auth(actor, **{"X-Request-Id": "x" * 500}), timeout=30
    )
    assert odd_id.status_code == 200 and odd_id.headers["X-Request-Id"].startswith("req_")
    key = ("\U0001f600" * 10).encode().decode("latin-1")  # UTF-8 bytes, as a client sends
    refused(post(api, actor, "/v1/files/upload", upload_body(), **{"Idempotency-Key": key}))
    response = requests.post(
        f"{api}/v1/files/{file['id']}/download-url?expiresInSeconds=%00",
        headers=auth(actor),
        timeout=30,
    )
    assert response.status_code in {200, 400}
