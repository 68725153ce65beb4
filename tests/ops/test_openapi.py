"""The OpenAPI document covers every route, is built from the code's own definitions (a
changed setting changes it), the docs page needs no CDN, and the API holds to the document
for ids of another project: they answer exactly like ids that do not exist, and nothing of
another project (or a webhook's secret) ever shows. Every phase and check of schemathesis runs
against a live server in tests/ops/test_schemathesis.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.validation import validate_schema
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core import NOT_SET
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from events.services import event_record
from files.shapes import FileJson
from storage_service.errors import ErrorJson
from storage_service.openapi import Shape, ShapeExtension
from storage_service.shapes import Data
from tests.factories import Actor, png_bytes
from tests.helpers import uploaded_file
from tests.storage import put_to
from variants.models import Variant
from variants.services import variant_process
from webhooks.models import Delivery, Endpoint
from webhooks.shapes import WebhookJson
from webhooks.signing import new_secret

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
            if route == "" or route.startswith(NOT_API):  # "": the root page is for people
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


def test_limits_that_are_settings_are_read_from_the_settings_when_the_document_is_built() -> None:
    with override_settings(
        SERVICE_MAX_FILENAME_LENGTH=77,
        SERVICE_MAX_MULTIPART_UPLOAD_BYTES=12345,
        SERVICE_MAX_METADATA_KEYS=5,
    ):
        schema = Client().get("/v1/openapi.json").json()
    components = schema["components"]["schemas"]
    assert components["UploadRequest"]["properties"]["filename"]["maxLength"] == 77
    assert components["UploadRequest"]["properties"]["metadata"]["maxProperties"] == 5
    assert components["MultipartStartRequest"]["properties"]["size"]["maximum"] == 12345
    default = Client().get("/v1/openapi.json").json()["components"]["schemas"]
    assert default["UploadRequest"]["properties"]["filename"]["maxLength"] == 255


def test_every_response_shape_is_a_closed_component_and_every_body_refuses_unknown_fields() -> None:
    components = Client().get("/v1/openapi.json").json()["components"]["schemas"]
    for name, component in components.items():
        for variant in component.get("anyOf", [component]):
            target = components[variant["$ref"].rsplit("/", 1)[1]] if "$ref" in variant else variant
            assert target["additionalProperties"] is False, name


def test_drf_spectacular_hands_every_declared_shape_to_the_shape_extension() -> None:
    for shape in (ErrorJson, FileJson, Data[FileJson], Data[list[WebhookJson]]):
        assert isinstance(OpenApiSerializerExtension.get_match(Shape(shape)), ShapeExtension)
    assert OpenApiSerializerExtension.get_match({"type": "object"}) is None
    # What is not a shape cannot be declared as one.
    with pytest.raises(TypeError):
        Shape({"type": "object"})


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
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)


# Each path parameter, and how to make one of a project's resources for it.
ID_PARAMETERS = ("file_id", "upload_id", "variant_id", "webhook_id", "delivery_id")


def _resources(actor: Actor, name: str) -> dict[str, str]:
    """An uploaded image (so it has its thumbnail variant), a multipart upload, and a webhook
    endpoint with one delivery, all of this actor's project."""
    file = uploaded_file(actor, png_bytes(), contentType="image/png", filename=f"{name}.png")
    upload = actor.post(
        "/v1/uploads/multipart",
        {"filename": f"{name}.bin", "contentType": "application/octet-stream", "size": 10},
    )
    assert upload.status_code == 201, upload.json()
    variant = Variant.objects.get(file_id=file["id"])
    # Made directly: registering through the API would resolve the URL's host, and this
    # endpoint is never sent to (on_commit does not run inside the test's transaction).
    endpoint = Endpoint.objects.create(
        **actor.tenant.owner(), url=f"https://{name}.example.com/hook", secret=new_secret()
    )
    with transaction.atomic():
        event = event_record(tenant=actor.tenant, type="file.created", data={"fileId": "x"})
    delivery = Delivery.objects.get(event=event, endpoint=endpoint)
    return {
        "file_id": file["id"],
        "upload_id": upload.json()["data"]["upload"]["id"],
        "variant_id": variant.id,
        "webhook_id": endpoint.id,
        "delivery_id": delivery.id,
        "secret": endpoint.secret,
    }


@pytest.fixture
def targets(owner: Actor, sibling: Actor) -> dict[str, Any]:
    """Resources of the caller's and of another project's, for the fuzzer to aim at."""
    return {
        "owner": owner,
        "mine": _resources(owner, "mine"),
        "theirs": _resources(sibling, "theirs"),
        "sibling": sibling,
    }


PREFIXES = {
    "file_id": "file",
    "upload_id": "upload",
    "variant_id": "var",
    "webhook_id": "wh",
    "delivery_id": "dl",
}


def aim(case: Any, targets: dict[str, Any]) -> list[str]:
    """Point a third of the generated ids at our resource and a third at the other project's;
    return the parameters aimed at the other project's."""
    theirs = []
    for name in ID_PARAMETERS:
        generated = case.path_parameters.get(name) if case.path_parameters else None
        if isinstance(generated, str):
            choice = sum(generated.encode()) % 3
            if choice == 1:
                case.path_parameters[name] = targets["mine"][name]
            elif choice == 2:
                case.path_parameters[name] = targets["theirs"][name]
                theirs.append(name)
    return theirs


def _without_request_id(response: Any) -> tuple[int, Any]:
    return response.status_code, response.text


# Its per-operation items are not run under pytest-xdist: `make test` runs them in a second,
# single-process pytest (marker `one_process`).
@pytest.mark.one_process
@schema.parametrize()
@FUZZ
def test_another_projects_ids_answer_exactly_like_missing_ones_and_nothing_leaks(
    case: Any, targets: dict[str, Any]
) -> None:
    """Every operation, with generated input, aimed at another project's resources: the answer
    is the one a never-existing id of the same kind gets (same status, same body), and no
    answer shows another project's ids or a webhook secret."""
    theirs = aim(case, targets)
    owner = targets["owner"]
    headers = {"Authorization": f"Bearer {owner.key.raw_key}"}
    with keeping_the_test_connection():
        response = case.call(headers=headers)
    assert response.status_code < 500, response.text
    for value in targets["theirs"].values():
        assert value not in response.text
    # A webhook's secret is shown once, when it is registered, and never again.
    assert targets["mine"]["secret"] not in response.text
    assert targets["sibling"].project.id not in response.text
    if theirs:
        for name in theirs:
            case.path_parameters[name] = f"{PREFIXES[name]}_{'0' * 26}"
        with keeping_the_test_connection():
            missing = case.call(headers=headers)
        assert _without_request_id(response) == _without_request_id(missing)


# --- The success paths, answer by answer ----------------------------------------------------

WALK_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def test_the_success_answers_of_uploads_variants_and_webhooks_match_the_schema(
    targets: dict[str, Any],
) -> None:
    """The fuzzer rarely lands on a success of these endpoints (ids must line up, a variant
    must be ready): walk each one's success path and check its answer against the document."""
    owner, mine = targets["owner"], targets["mine"]

    def call(method: str, path: str, status: int, body: Any = NOT_SET, **ids: str) -> Any:
        operation = schema[path][method]
        case = operation.Case(path_parameters={**mine, **ids}, body=body)
        case.path_parameters = {
            k: v for k, v in case.path_parameters.items() if "{" + k + "}" in path
        }
        if body is not NOT_SET:
            case.media_type = "application/json"
        with keeping_the_test_connection():
            response = case.call_and_validate(
                headers={"Authorization": f"Bearer {owner.key.raw_key}"}, checks=WALK_CHECKS
            )
        assert response.status_code == status, response.text
        return response.json()

    # Variants: list, a new one (202), and a ready one's download URL.
    call("GET", "/v1/files/{file_id}/variants", 200)
    call("POST", "/v1/files/{file_id}/transform", 202, {"width": 32, "format": "png"})
    assert variant_process(variant_id=mine["variant_id"]).status == "ready"
    call("POST", "/v1/files/{file_id}/variants/{variant_id}/download-url", 200, {})

    # Multipart: new URLs, the parts held, a completed upload, and an abort.
    call("POST", "/v1/uploads/multipart/{upload_id}/parts", 200, {"partNumbers": [1]})
    call("GET", "/v1/uploads/multipart/{upload_id}/parts", 200)
    started = call(
        "POST",
        "/v1/uploads/multipart",
        201,
        {"filename": "walk.bin", "contentType": "application/octet-stream", "size": 5},
    )["data"]["upload"]
    etag = put_to({**started["parts"][0], "method": "PUT", "headers": {}}, b"bytes")
    assert etag.status_code == 200, etag.text
    parts = [{"partNumber": 1, "etag": etag.headers["ETag"]}]
    call(
        "POST",
        "/v1/uploads/multipart/{upload_id}/complete",
        200,
        {"parts": parts},
        upload_id=started["id"],
    )
    call("DELETE", "/v1/uploads/multipart/{upload_id}", 200)

    # Webhooks: register (IP literal: no DNS), list, get, deliveries, redeliver, delete.
    with override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=True):
        created = call("POST", "/v1/webhooks", 201, {"url": "https://127.0.0.1/hook"})
    assert created["data"]["secret"]
    call("GET", "/v1/webhooks", 200)
    call("GET", "/v1/webhooks/{webhook_id}", 200)
    call("GET", "/v1/webhooks/{webhook_id}/deliveries", 200)
    call("POST", "/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", 202, {})
    call("DELETE", "/v1/webhooks/{webhook_id}", 200)
