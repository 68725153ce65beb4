"""The client's request and response types (clients/js/src/generated/openapi.ts) are generated
from the served OpenAPI document by openapi-typescript: they must match it."""

from __future__ import annotations

from pathlib import Path

from django.test import Client

from tests.js.conftest import run_node


def test_the_checked_in_types_match_the_served_document(tmp_path: Path) -> None:
    document = tmp_path / "openapi.json"
    document.write_bytes(Client().get("/v1/openapi.json").content)
    run = run_node(["scripts/generate-types.mjs", str(document), "--check"], env={}, timeout=60)
    assert run.returncode == 0, run.output


def test_the_document_resolves_every_reference() -> None:
    """openapi-typescript refuses a document with a dangling $ref (the webhooks section's
    envelope once was one)."""
    body = Client().get("/v1/openapi.json").json()
    schemas = body["components"]["schemas"]
    text = str(body)
    for ref in set(part.split("'")[0] for part in text.split("#/components/schemas/")[1:]):
        assert ref in schemas, ref
