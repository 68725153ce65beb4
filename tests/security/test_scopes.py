"""Restricted keys: issued with scopes, refused 403 INSUFFICIENT_SCOPE outside them, before
anything happens; every operation of the document declares the scope it needs."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.test import APIClient
from rest_framework.views import APIView

from accounts import scopes
from accounts.models import ApiKey
from accounts.scopes import SCOPES
from accounts.services import api_key_issue
from accounts.throttling import reset_client
from events.models import Event
from files.models import File
from storage_service.errors import InsufficientScope
from tests.factories import Actor
from tests.helpers import error_code, uploaded_file, within_one_window
from webhooks.models import Endpoint

pytestmark = pytest.mark.django_db


def client_with(owner: Actor, scopes: list[str] | None, environment: str = "test") -> APIClient:
    issued = api_key_issue(project=owner.project, environment=environment, scopes=scopes)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
    return client


def test_a_key_issued_with_scopes_is_a_restricted_rk_key(owner: Actor) -> None:
    issued = api_key_issue(
        project=owner.project, environment="live", scopes=["webhooks:read", "files:read"]
    )
    assert issued.raw_key.startswith("rk_live_")
    assert issued.api_key.scopes == ["files:read", "webhooks:read"]  # canonical order
    assert api_key_issue(project=owner.project, environment="test").raw_key.startswith("sk_test_")


@pytest.mark.parametrize(
    "scopes", [["files:admin"], ["files:read", "FILES:READ"], [""], ["*"], ["events:write"]]
)
def test_an_unknown_scope_is_refused_at_issue(owner: Actor, scopes: list[str]) -> None:
    before = ApiKey.objects.count()
    with pytest.raises(ValueError, match="scope"):
        api_key_issue(project=owner.project, environment="test", scopes=scopes)
    assert ApiKey.objects.count() == before


def test_the_command_issues_a_restricted_key_and_refuses_unknown_scopes(owner: Actor) -> None:
    out = io.StringIO()
    call_command(
        "issue_api_key",
        "--project",
        owner.project.id,
        "--environment",
        "test",
        "--scopes",
        "files:read,webhooks:read",
        stdout=out,
    )
    raw_key = out.getvalue().strip().splitlines()[-1]
    assert re.fullmatch(r"rk_test_[A-Za-z0-9_-]{43}", raw_key)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    assert client.get("/v1/me").json()["data"]["apiKey"]["scopes"] == [
        "files:read",
        "webhooks:read",
    ]

    with pytest.raises(CommandError, match="unknown scope"):
        call_command(
            "issue_api_key",
            "--project",
            owner.project.id,
            "--environment",
            "test",
            "--scopes",
            "files:read,files:delete",
            stdout=io.StringIO(),
        )


def test_me_shows_the_scopes_of_any_key(owner: Actor) -> None:
    me = owner.get("/v1/me").json()["data"]["apiKey"]
    assert me["scopes"] == list(SCOPES)
    assert me["prefix"].startswith("sk_test_")

    restricted = client_with(owner, ["events:read"]).get("/v1/me")
    assert restricted.status_code == 200
    assert restricted.json()["data"]["apiKey"]["scopes"] == ["events:read"]
    assert restricted.json()["data"]["apiKey"]["prefix"].startswith("rk_test_")


def test_a_request_outside_the_scopes_is_refused_and_nothing_happens(owner: Actor) -> None:
    reader = client_with(owner, ["webhooks:read", "files:read"])
    before = (Endpoint.objects.count(), Event.objects.count())

    response = reader.post("/v1/webhooks", {"url": "https://hooks.example.com/x"}, format="json")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "INSUFFICIENT_SCOPE"
    assert response.json()["error"]["details"] == {"requiredScope": "webhooks:write"}
    assert (Endpoint.objects.count(), Event.objects.count()) == before
    assert reader.get("/v1/webhooks").status_code == 200


def test_no_key_is_401_before_any_scope_check(owner: Actor) -> None:
    response = APIClient().post("/v1/webhooks", {"url": "https://x.example"}, format="json")
    assert response.status_code == 401
    assert error_code(response) == "UNAUTHENTICATED"
    revoked = api_key_issue(project=owner.project, environment="test", scopes=["files:read"])
    ApiKey.objects.filter(id=revoked.api_key.id).update(revoked_at="2026-01-01T00:00:00Z")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {revoked.raw_key}")
    assert client.post("/v1/webhooks", {"url": "https://x.example"}, format="json").status_code == (
        401
    )


def test_refused_requests_do_not_spend_the_keys_rate_limit(owner: Actor) -> None:
    reset_client()
    reader = client_with(owner, ["events:read"])
    with override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=2):
        within_one_window(5)
        for _ in range(5):
            assert reader.get("/v1/webhooks").status_code == 403
        assert reader.get("/v1/events").status_code == 200
        assert reader.get("/v1/events").status_code == 200
        assert reader.get("/v1/events").status_code == 429
    reset_client()


# --- The walk: every operation of the document -------------------------------------------

HOW_TO_DECLARE = (
    "declares no scope. Declare the scope a restricted key needs on the view method's "
    '@extend_schema: extensions=scope("files:read") (accounts/scopes.py: files:read, '
    "files:write, webhooks:read, webhooks:write, events:read), or extensions=scope(None) "
    "for an operation every key may call."
)
PLACEHOLDERS = {
    "file_id": "file_01m80p9qhfbw0rf406y6kr13qe",
    "upload_id": "upload_01m80p9qhfbw0rf406y6kr13qe",
    "variant_id": "var_01m80p9qhfbw0rf406y6kr13qe",
    "webhook_id": "wh_01m80p9qhfbw0rf406y6kr13qe",
    "delivery_id": "dl_01m80p9qhfbw0rf406y6kr13qe",
    "event_id": "evt_01m80p9qhfbw0rf406y6kr13qe",
    "job_id": "job_01m80p9qhfbw0rf406y6kr13qe",
}


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    document = Client().get("/v1/openapi.json").json()
    found = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"} and operation.get("security"):
                found.append((path, method, operation))
    return found


def test_every_operation_that_takes_a_key_declares_its_scope() -> None:
    undeclared = [
        f"{method.upper()} {path} ({operation['operationId']})"
        for path, method, operation in operations()
        if "x-required-scope" not in operation
    ]
    assert not undeclared, f"{'; '.join(undeclared)} {HOW_TO_DECLARE}"


def test_every_declared_scope_is_in_the_documents_security_requirement() -> None:
    for path, method, operation in operations():
        needed = operation.get("x-required-scope")
        if needed is None:
            continue
        assert needed in SCOPES, f"{method.upper()} {path}: unknown scope {needed!r}"
        # An upload token (no scopes) is accepted too where the operation says so.
        token: list[dict[str, list[str]]] = (
            [{"uploadToken": []}] if operation.get("x-upload-token") else []
        )
        assert operation["security"] == [*token, {"apiKey": [needed]}], (method, path)
        assert "INSUFFICIENT_SCOPE" in operation["responses"]["403"]["description"]


def test_each_operation_refuses_a_key_with_every_scope_but_the_one_it_needs(
    owner: Actor,
) -> None:
    clients = {
        scope: client_with(owner, [other for other in SCOPES if other != scope]) for scope in SCOPES
    }
    walked = 0
    for path, method, operation in operations():
        assert "x-required-scope" in operation, f"{method.upper()} {path} {HOW_TO_DECLARE}"
        needed = operation["x-required-scope"]
        url = re.sub(r"\{(\w+)\}", lambda m: PLACEHOLDERS.get(m[1], "x"), path)
        if needed is None:
            # Every key may call it: one holding a single, unrelated scope is answered.
            response = getattr(client_with(owner, ["events:read"]), method)(url, format="json")
            assert response.status_code != 403, (method, path, response.content)
            continue
        before = (Endpoint.objects.count(), Event.objects.count())
        response = getattr(clients[needed], method)(url, {}, format="json")
        assert response.status_code == 403, (method, path, response.content)
        assert response.json()["error"] == {
            "code": "INSUFFICIENT_SCOPE",
            "message": response.json()["error"]["message"],
            "details": {"requiredScope": needed},
        }, (method, path)
        assert (Endpoint.objects.count(), Event.objects.count()) == before
        walked += 1
    assert walked >= 25


def test_reads_and_uploads_refuse_a_key_without_the_scope(owner: Actor) -> None:
    file_id = uploaded_file(owner)["id"]
    writer = client_with(owner, ["files:write"])
    reader = client_with(owner, ["files:read"])
    files_before = File.objects.count()

    denied = writer.get(f"/v1/files/{file_id}")
    refused = reader.post(
        "/v1/files/upload",
        {"filename": "a.txt", "contentType": "text/plain", "size": 3},
        format="json",
    )

    assert denied.status_code == 403
    assert denied.json()["error"]["details"] == {"requiredScope": "files:read"}
    assert refused.status_code == 403
    assert refused.json()["error"]["details"] == {"requiredScope": "files:write"}
    assert File.objects.count() == files_before
    assert reader.get(f"/v1/files/{file_id}").status_code == 200
    started = writer.post(
        "/v1/files/upload",
        {"filename": "a.txt", "contentType": "text/plain", "size": 3},
        format="json",
    )
    assert started.status_code == 201


class _Undeclared(APIView):
    @extend_schema(summary="A route someone forgot to give a scope")
    def get(self, request: Any) -> Response:
        return Response({})


def test_a_route_that_declares_no_scope_is_refused_to_every_restricted_key(
    owner: Actor,
) -> None:
    restricted = ApiKey(scopes=list(SCOPES))
    with pytest.raises(InsufficientScope) as refused:
        scopes.check(restricted, _Undeclared, "get", "GET")
    assert refused.value.details == {"requiredScope": None}
    scopes.check(ApiKey(scopes=None), _Undeclared, "get", "GET")  # a full key may
