"""CORS for upload tokens only: preflights of the token routes, the page's origin on token
answers, and never a CORS header for an API key."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from storage_service.cors import TOKEN_ROUTES
from tests.factories import Actor, png_bytes, upload_body
from tests.uploads.tokens import PAGE, page_for

pytestmark = pytest.mark.django_db

ANY_ORIGIN = "https://any.example"


def preflight(path: str, origin: str = ANY_ORIGIN) -> object:
    return Client().options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type,idempotency-key",
        },
    )


@pytest.mark.parametrize(
    "path",
    [
        "/v1/files/upload",
        "/v1/files/file_01m8et0b8efemwg3mk525z46dp/complete",
        "/v1/uploads/multipart",
        "/v1/uploads/multipart/upload_01m8et0b8efemwg3mk525z46dp",
        "/v1/uploads/multipart/upload_01m8et0b8efemwg3mk525z46dp/parts",
        "/v1/uploads/multipart/upload_01m8et0b8efemwg3mk525z46dp/complete",
    ],
)
def test_the_token_routes_answer_preflight_from_any_origin(path: str) -> None:
    response = preflight(path)

    assert response.status_code == 204  # type: ignore[attr-defined]
    assert response["Access-Control-Allow-Origin"] == ANY_ORIGIN  # type: ignore[index]
    allowed = response["Access-Control-Allow-Headers"]  # type: ignore[index]
    assert set(allowed.split(", ")) == {"authorization", "content-type", "idempotency-key"}
    assert "POST" in response["Access-Control-Allow-Methods"]  # type: ignore[index]
    assert "Origin" in response["Vary"]  # type: ignore[index]


@pytest.mark.parametrize(
    "path", ["/v1/files", "/v1/upload-tokens", "/v1/me", "/v1/files/file_x/download-url"]
)
def test_other_routes_answer_no_preflight(path: str) -> None:
    response = preflight(path)
    assert not response.has_header("Access-Control-Allow-Origin")  # type: ignore[attr-defined]


def test_a_token_answer_carries_the_pages_origin_refusals_included(owner: Actor) -> None:
    page = page_for(owner, allowedOrigins=[PAGE])
    stranger = page_for(owner, origin="https://evil.example", allowedOrigins=[PAGE])
    body = upload_body(png_bytes())

    allowed = page.post("/v1/files/upload", body)
    refused = stranger.post("/v1/files/upload", body)
    out_of_scope = page.get("/v1/files")

    assert allowed.status_code == 201
    assert allowed["Access-Control-Allow-Origin"] == PAGE
    assert "X-Request-Id" in allowed["Access-Control-Expose-Headers"]
    assert refused.status_code == 403
    assert refused["Access-Control-Allow-Origin"] == "https://evil.example"
    assert out_of_scope.status_code == 403 and out_of_scope.has_header(
        "Access-Control-Allow-Origin"
    )


def test_an_api_key_request_never_gets_cors_headers(owner: Actor) -> None:
    body = upload_body(png_bytes())
    response = owner.client.post("/v1/files/upload", body, format="json", headers={"Origin": PAGE})
    listed = owner.client.get("/v1/files", headers={"Origin": PAGE})

    assert response.status_code == 201 and listed.status_code == 200
    for answer in (response, listed):
        assert not any(name.lower().startswith("access-control-") for name in answer.headers)


def test_the_routes_answering_preflight_are_exactly_those_a_token_may_call() -> None:
    document = Client().get("/v1/openapi.json").json()
    token_paths = {
        path
        for path, operations in document["paths"].items()
        for operation in operations.values()
        if isinstance(operation, dict) and operation.get("x-upload-token")
    }
    others = set(document["paths"]) - token_paths

    def concrete(path: str) -> str:
        return re.sub(r"\{[^}]+\}", "x_1", path)

    assert len(token_paths) == 6
    assert all(TOKEN_ROUTES.match(concrete(path)) for path in token_paths)
    assert not any(TOKEN_ROUTES.match(concrete(path)) for path in others)
    for path in token_paths:
        for operation in document["paths"][path].values():
            if isinstance(operation, dict) and operation.get("x-upload-token"):
                assert {"uploadToken": []} in operation["security"] or any(
                    "uploadToken" in requirement for requirement in operation["security"]
                )
    listed = document["paths"]["/v1/files"]["get"]["security"]
    assert not any("uploadToken" in requirement for requirement in listed)
