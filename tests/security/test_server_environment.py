"""The server's environment never reaches a request. granian starts every request's WSGI
environ from a copy of the server process's ``os.environ``; without
``storage_service.serving.WithoutServerEnvironment`` a variable named like a header would
read as one the client sent, and ``request.META`` would hold the server's secrets."""

from __future__ import annotations

import os
from typing import Any

import pytest
import requests

from storage_service.serving import WithoutServerEnvironment
from tests.factories import make_actor
from tests.servers import serve_api

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_variable_named_like_a_header_is_not_a_header_the_client_sent(
    transactional_db: None,
) -> None:
    actor = make_actor("server-environment", environment="test")
    other = make_actor("server-environment-other", environment="test")
    with serve_api(
        workers=1,
        HTTP_AUTHORIZATION=f"Bearer {other.key.raw_key}",
        HTTP_X_REQUEST_ID="from-the-server-environment",
    ) as base:
        anonymous = requests.get(f"{base}/v1/files", timeout=30)
        assert anonymous.status_code == 401
        assert anonymous.json()["error"]["code"] == "UNAUTHENTICATED"
        assert anonymous.headers["X-Request-Id"].startswith("req_")

        sent = requests.get(
            f"{base}/v1/files",
            headers={"Authorization": f"Bearer {actor.key.raw_key}", "X-Request-Id": "mine-1"},
            timeout=30,
        )
        assert sent.status_code == 200
        assert sent.headers["X-Request-Id"] == "mine-1"


def test_the_application_sees_the_request_without_the_servers_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SERVICE_SECRET_FOR_THIS_TEST", "s3cr3t")
    monkeypatch.setenv("HTTP_X_FROM_ENVIRONMENT", "1")
    seen: dict[str, Any] = {}

    def application(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.update(environ)
        return []

    # As granian builds it: the environment's copy, then what the request set.
    environ = {**os.environ, "PATH_INFO": "/v1/files", "HTTP_X_FROM_ENVIRONMENT": "client"}
    WithoutServerEnvironment(application)(environ, lambda *args: None)
    assert "SERVICE_SECRET_FOR_THIS_TEST" not in seen
    assert seen["HTTP_X_FROM_ENVIRONMENT"] == "client"  # the client's header, not the variable
    assert seen["PATH_INFO"] == "/v1/files"
