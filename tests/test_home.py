"""The page at ``/``: a person opening the service's address finds the document, the
console and the probes, and every link on it answers."""

from __future__ import annotations

import re

from django.test import Client


def test_the_root_page_links_the_document_the_console_and_the_probes(db: None) -> None:
    client = Client()
    page = client.get("/")
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    links = re.findall(r'href="([^"]+)"', page.content.decode())
    assert links == ["/docs", "/v1/openapi.json", "/admin/", "/healthz", "/readyz"]
    for link in ("/docs", "/v1/openapi.json", "/healthz"):
        assert client.get(link).status_code == 200, link
    # The console's address leads to its login page, not to the API's JSON 404.
    assert client.get("/admin/", follow=True).status_code == 200


def test_the_root_page_refuses_writes_with_the_error_body(db: None) -> None:
    answer = Client().post("/", data="{}", content_type="application/json")
    assert answer.status_code == 405
    assert answer["Allow"] == "GET, HEAD"
    assert answer.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
