"""Django's own limits on what it parses, over real HTTP (an API server as `make run` starts
it): more than ``DATA_UPLOAD_MAX_NUMBER_FIELDS`` parameters in the query string or a form
body, more than ``DATA_UPLOAD_MAX_NUMBER_FILES`` files, a multipart body that cannot be split.
Each is one 400 ``VALIDATION_ERROR`` naming the limit on every route, API or not, never a 500;
a body over the cap stays the documented 413 ``PAYLOAD_TOO_LARGE``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http.multipartparser import MultiPartParserError
from django.test import RequestFactory

from storage_service.errors import exception_handler
from storage_service.errorviews import handler400
from tests.factories import Actor, make_actor

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(api_base: str) -> str:
    """The session's server: these limits are Django's defaults, which it runs with."""
    return api_base


@pytest.fixture
def actor() -> Actor:
    return make_actor("limits")


def auth(actor: Actor, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {actor.key.raw_key}", **extra}


def query(count: int, name: str = "x{}") -> str:
    return "&".join(f"{name.format(i)}=1" for i in range(count))


def refused(response: requests.Response, *words: str, part: str) -> None:
    """A 400 VALIDATION_ERROR whose message names ``words`` and whose details name ``part``."""
    assert response.status_code == 400, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR", error
    for word in words:
        assert word in error["message"], error
    assert set(error["details"]) == {part}, error
    assert response.headers["Content-Type"] == "application/json"


def multipart(parts: list[bytes], boundary: str = "b0undary") -> tuple[bytes, str]:
    body = b"".join(b"--" + boundary.encode() + b"\r\n" + part + b"\r\n" for part in parts)
    return body + b"--" + boundary.encode() + b"--\r\n", f"multipart/form-data; boundary={boundary}"


def field(name: str, value: str) -> bytes:
    return f'Content-Disposition: form-data; name="{name}"\r\n\r\n{value}'.encode()


def upload(index: int) -> bytes:
    return (
        f'Content-Disposition: form-data; name="f{index}"; filename="f{index}.txt"\r\n'
        "Content-Type: text/plain\r\n\r\nx"
    ).encode()


# --- The query string ------------------------------------------------------------------------


def test_more_than_1000_query_parameters_are_a_400_naming_the_limit_on_every_route(
    api: str, actor: Actor
) -> None:
    file_id, webhook_id = "file_00000000000000000000000000", "wh_00000000000000000000000000"
    routes = [
        ("GET", "/v1/files"),
        ("GET", "/v1/jobs"),
        ("GET", "/v1/events"),
        ("GET", "/v1/folders"),
        ("GET", "/v1/webhooks"),
        ("GET", f"/v1/webhooks/{webhook_id}/deliveries"),
        ("GET", f"/v1/files/{file_id}/variants"),
        ("GET", f"/v1/files/{file_id}"),
        ("GET", "/v1/me"),
        ("POST", "/v1/files/upload"),
        ("POST", "/v1/files/batch"),
        ("GET", "/v1/openapi.json"),
        ("GET", "/healthz"),
        ("GET", "/admin/login/"),
        ("GET", "/v1/no-such-route"),
        ("GET", "/no-such-page"),
    ]
    for method, route in routes:
        response = requests.request(
            method, f"{api}{route}?{query(1001)}", json={}, headers=auth(actor), timeout=30
        )
        refused(response, "1000", "DATA_UPLOAD_MAX_NUMBER_FIELDS", part="query")
    # Without a key too: the limit is checked before anything else reads the request.
    refused(requests.get(f"{api}/v1/files?{query(1001)}", timeout=30), "1000", part="query")


def test_the_list_filters_answer_as_before_up_to_the_limit(api: str, actor: Actor) -> None:
    for route in ["/v1/files", "/v1/jobs", "/v1/events", "/v1/folders"]:
        response = requests.get(f"{api}{route}?{query(999)}", headers=auth(actor), timeout=30)
        assert response.status_code == 200, (route, response.text[:300])
    # Metadata filters: past the guide's 10 the list says so; past Django's limit, the limit.
    eleven = requests.get(
        f"{api}/v1/files?{query(11, 'metadata[k{}]')}", headers=auth(actor), timeout=30
    )
    assert eleven.status_code == 400 and eleven.json()["error"]["code"] == "VALIDATION_ERROR"
    assert "10" in str(eleven.json()["error"]), eleven.json()
    many = requests.get(
        f"{api}/v1/files?{query(1001, 'metadata[k{}]')}", headers=auth(actor), timeout=30
    )
    refused(many, "1000", "DATA_UPLOAD_MAX_NUMBER_FIELDS", part="query")


# --- The body -------------------------------------------------------------------------------


FORM = "application/x-www-form-urlencoded"


def form_bodies() -> list[tuple[bytes, str]]:
    fields, content_type = multipart([field(f"x{i}", "1") for i in range(1001)])
    files, _ = multipart([upload(i) for i in range(101)])
    return [(query(1001).encode(), FORM), (fields, content_type), (files, content_type)]


@pytest.mark.parametrize("route", ["/admin/login/", "/no-such-page"])
def test_a_form_body_past_a_limit_is_a_400_naming_it(api: str, route: str) -> None:
    def post(body: bytes, content_type: str) -> requests.Response:
        return requests.post(
            f"{api}{route}", data=body, headers={"Content-Type": content_type}, timeout=30
        )

    too_many_fields = post(query(1001).encode(), FORM)
    refused(too_many_fields, "1000", "DATA_UPLOAD_MAX_NUMBER_FIELDS", part="body")

    body, content_type = multipart([field(f"x{i}", "1") for i in range(1001)])
    refused(post(body, content_type), "1000", "DATA_UPLOAD_MAX_NUMBER_FIELDS", part="body")

    body, content_type = multipart([upload(i) for i in range(101)])
    refused(post(body, content_type), "100", "DATA_UPLOAD_MAX_NUMBER_FILES", part="body")

    # A boundary that is missing, empty, too long, or not printable ASCII.
    body, _ = multipart([field("a", "1")])
    for content_type in [
        "multipart/form-data",
        "multipart/form-data; boundary=",
        "multipart/form-data; boundary=" + "b" * 202,
        'multipart/form-data; boundary="ab\t"',
    ]:
        refused(post(body, content_type), "boundary", part="body")
    # A part's headers past 1,024 bytes.
    header = b'Content-Disposition: form-data; name="a"\r\nX-Pad: ' + b"p" * 2000
    body, content_type = multipart([header + b"\r\n\r\n1"])
    refused(post(body, content_type), "1,024 bytes", part="body")


def test_the_api_answers_any_form_415_without_reading_it(api: str, actor: Actor) -> None:
    bad, _ = multipart([field("a", "1")])
    for body, content_type in [*form_bodies(), (bad, "multipart/form-data; boundary=")]:
        for route in ["/v1/files/upload", "/v1/files/batch", "/v1/webhooks"]:
            response = requests.post(
                f"{api}{route}",
                data=body,
                headers=auth(actor, **{"Content-Type": content_type}),
                timeout=30,
            )
            assert response.status_code == 415, (route, content_type, response.text[:300])
            assert response.json()["error"]["code"] == "VALIDATION_ERROR"


def test_a_form_body_of_unknown_length_is_checked_once_read(api: str, actor: Actor) -> None:
    body, content_type = multipart([upload(i) for i in range(101)])

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    response = requests.post(
        f"{api}/admin/login/", data=pieces(), headers={"Content-Type": content_type}, timeout=30
    )
    refused(response, "DATA_UPLOAD_MAX_NUMBER_FILES", part="body")


def test_a_form_within_the_limits_still_reaches_its_view(api: str) -> None:
    # The admin's login form: read by the middleware, then by CSRF's check, which refuses it.
    body, content_type = multipart([field("username", "a"), field("password", "b")])
    response = requests.post(
        f"{api}/admin/login/", data=body, headers={"Content-Type": content_type}, timeout=30
    )
    assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"


def test_a_body_over_the_cap_is_the_documented_413(api: str, actor: Actor) -> None:
    response = requests.post(
        f"{api}/admin/login/",
        data=query(200_000).encode(),
        headers={"Content-Type": FORM},
        timeout=30,
    )
    assert response.status_code == 413, response.text[:300]
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


# --- Raised past the middleware --------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "status", "words"),
    [
        (TooManyFieldsSent("x"), 400, "DATA_UPLOAD_MAX_NUMBER_FIELDS"),
        (TooManyFilesSent("x"), 400, "DATA_UPLOAD_MAX_NUMBER_FILES"),
        (MultiPartParserError("Invalid boundary in multipart: None"), 400, "boundary"),
        (RequestDataTooBig("x"), 413, "bytes"),
    ],
)
def test_a_view_or_a_django_handler_that_meets_one_renders_the_same_error(
    error: Exception, status: int, words: str
) -> None:
    """Whatever reads the request after the middleware (a DRF view, Django's own handling of a
    SuspiciousOperation) answers the same body."""
    request = RequestFactory().get("/v1/files")
    drf = exception_handler(error, {"request": request, "view": None})
    assert drf is not None and drf.status_code == status
    body: Any = drf.data
    assert words in body["error"]["message"]
    assert body["error"]["code"] == ("PAYLOAD_TOO_LARGE" if status == 413 else "VALIDATION_ERROR")
    django = handler400(request, error)
    assert django.status_code == status
    assert words in django.content.decode()
