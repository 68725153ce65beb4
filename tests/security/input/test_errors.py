"""What a failing database and the oddest requests answer: a database error that is not
about the connection is a 500 with the request id (never a 503 that invites retries), and
odd bodies, queries and paths get a clear 4xx."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import requests
from django.db import connection

from tests.factories import Actor
from tests.security.input.hostile import (
    auth,
    post,
    refused,
    send,
    upload_body,
    uploaded_file,
)
from tests.servers import serve_api

pytestmark = pytest.mark.django_db(transaction=True)

# --- Only connection-class database errors answer 503 -----------------------------------------

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


# --- Everything else the worst client could send ----------------------------------------------


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
