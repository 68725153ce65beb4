"""Headers: a contentType with CR or LF is refused wherever it enters, and the headers an
uploader sent are never served to the people who download."""

from __future__ import annotations

import random

import pytest
import requests

from tests.factories import Actor
from tests.security.input.hostile import (
    CRLF_TYPE,
    MIB,
    post,
    refused,
    upload_body,
    uploaded_file,
)

pytestmark = pytest.mark.django_db(transaction=True)

# --- Header injection through contentType -----------------------------------------------------


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


# --- The uploader does not choose the downloader's headers ------------------------------------

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
