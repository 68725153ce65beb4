"""The OpenAPI document covers every route, the docs page needs no CDN, and the API holds to
the document under schema-driven fuzzing (schemathesis): no 500, no response that breaks the
schema, nothing of another project."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.validation import validate_schema
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.factories import Actor
from tests.helpers import uploaded_file

pytestmark = pytest.mark.django_db

NOT_API = ("admin/", "bench/", "docs", "v1/openapi.json", "^")


def api_routes() -> set[tuple[str, str]]:
    """(OpenAPI path, method) for every route of the URLconf that is part of the API."""
    found: set[tuple[str, str]] = set()

    def walk(patterns: list[Any], prefix: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
                continue
            assert isinstance(pattern, URLPattern)
            route = prefix + str(pattern.pattern)
            if route.startswith(NOT_API):
                continue
            path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
            callback = pattern.callback
            actions = getattr(callback, "actions", None)
            if actions is not None:
                methods = set(actions)
            elif hasattr(callback, "view_class"):
                view = callback.view_class
                methods = {m for m in view.http_method_names if hasattr(view, m)} - {"options"}
            else:
                methods = {"get"}  # plain Django views: the probes
            # HEAD comes with every GET (DRF adds it); OpenAPI documents the GET.
            found.update((path, method) for method in methods if method != "head")

    walk(get_resolver().url_patterns, "")
    return found


def test_the_schema_is_valid_openapi_and_served_without_a_key() -> None:
    response = Client().get("/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)
    assert "Error" in schema["components"]["schemas"]
    assert schema["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"


def test_every_route_is_in_the_schema() -> None:
    schema = Client().get("/v1/openapi.json").json()
    documented = {(path, method) for path, ops in schema["paths"].items() for method in ops}
    routes = api_routes()
    assert len(routes) > 10
    assert routes - documented == set()


def test_every_error_response_uses_the_error_body() -> None:
    schema = Client().get("/v1/openapi.json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    content = response["content"]["application/json"]["schema"]
                    assert content == {"$ref": "#/components/schemas/Error"}, (path, method)


def test_the_docs_page_is_served_with_its_own_assets() -> None:
    page = Client().get("/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/v1/openapi.json" in html
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(not s.startswith(("http:", "https:", "//")) for s in sources)
    for source in sources:
        assert Client().get(source).status_code == 200, source


# --- Fuzzing --------------------------------------------------------------------------------


def _load_schema() -> Any:
    """The document as the API serves it, built at import (no request, no database)."""
    from drf_spectacular.generators import SchemaGenerator

    loaded = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    loaded.app = WSGIHandler()
    return loaded


schema = _load_schema()


@contextmanager
def keeping_the_test_connection() -> Iterator[None]:
    # Django closes the database connection at the end of each request; under the test's
    # transaction that would close it for the test too. Django's own test client unhooks the
    # same signal handlers around each call to the app, and so does this.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


FUZZ = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)


@pytest.fixture
def targets(owner: Actor, sibling: Actor) -> dict[str, Any]:
    """A file of the caller's and one of another project's, for the fuzzer to aim at."""
    mine = uploaded_file(owner, b"mine", contentType="text/plain")
    theirs = uploaded_file(sibling, b"theirs", contentType="text/plain", filename="theirs.txt")
    return {"owner": owner, "mine": mine["id"], "theirs": theirs["id"], "sibling": sibling}


def aim(case: Any, targets: dict[str, Any]) -> None:
    """Point a third of the generated file ids at our file and a third at the other project's."""
    generated = case.path_parameters.get("file_id") if case.path_parameters else None
    if isinstance(generated, str):
        choice = sum(generated.encode()) % 3
        if choice == 1:
            case.path_parameters["file_id"] = targets["mine"]
        elif choice == 2:
            case.path_parameters["file_id"] = targets["theirs"]


@schema.parametrize()
@FUZZ
def test_fuzzing_with_a_key_finds_no_500_no_schema_break_and_no_leak(
    case: Any, targets: dict[str, Any]
) -> None:
    aim(case, targets)
    owner = targets["owner"]
    with keeping_the_test_connection():
        response = case.call_and_validate(
            headers={"Authorization": f"Bearer {owner.key.raw_key}"},
            # Valid-by-schema data may still be refused by rules the schema can't say (a file
            # that is not uploaded yet, a path segment of ".."): those are 4xx by design.
            excluded_checks=[positive_data_acceptance],
        )
    assert response.status_code < 500, response.text
    assert targets["theirs"] not in response.text
    assert targets["sibling"].project.id not in response.text


@schema.parametrize()
@FUZZ
def test_fuzzing_without_a_key_is_always_401(case: Any, targets: dict[str, Any]) -> None:
    if case.path in {"/healthz", "/readyz"}:
        return
    aim(case, targets)
    case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    with keeping_the_test_connection():
        response = case.call()
    assert response.status_code == 401, (case.method, case.path, response.text)
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
