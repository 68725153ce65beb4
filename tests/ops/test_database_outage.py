"""PostgreSQL goes away and comes back: 503 with the error body meanwhile, no half-done change,
and the server heals without a restart."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from django.conf import settings

from files.models import File
from tests.factories import make_actor
from tests.proxy import TcpProxy
from tests.subprocesses import database_url

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_api_answers_503_while_postgresql_is_away_and_recovers(serve: Any) -> None:
    db = settings.DATABASES["default"]
    if str(db["HOST"]).startswith("/"):
        pytest.skip("the embedded PostgreSQL listens on a unix socket; no TCP to cut")
    actor = make_actor("outage")
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {actor.key.raw_key}"
    body = {"filename": "a.txt", "contentType": "text/plain", "size": 3}

    with TcpProxy((str(db["HOST"] or "127.0.0.1"), int(str(db["PORT"] or 5432)))) as proxy:
        url = database_url(host="127.0.0.1", port=proxy.port)
        with serve(DATABASE_URL=url, DATABASE_CONNECT_TIMEOUT="2") as base:
            assert api.get(f"{base}/v1/me", timeout=10).status_code == 200
            assert api.post(f"{base}/v1/files/upload", json=body, timeout=10).status_code == 201

            proxy.cut()
            for method, path in (("get", "/v1/me"), ("post", "/v1/files/upload")):
                response = api.request(method, f"{base}{path}", json=body, timeout=15)
                assert response.status_code == 503, response.text
                assert response.json()["error"]["code"] == "SERVICE_UNAVAILABLE"
                assert response.headers["Retry-After"] == "1"
                assert response.headers["X-Request-Id"]
            assert requests.get(f"{base}/healthz", timeout=10).status_code == 200
            ready = requests.get(f"{base}/readyz", timeout=15)
            assert ready.status_code == 503
            assert ready.json()["error"]["details"]["checks"]["database"]["status"] == "unavailable"

            proxy.restore()
            assert api.get(f"{base}/v1/me", timeout=10).status_code == 200
            assert requests.get(f"{base}/readyz", timeout=10).status_code == 200
            assert api.post(f"{base}/v1/files/upload", json=body, timeout=10).status_code == 201

    # The upload refused during the outage left nothing behind.
    assert File.objects.filter(project=actor.project).count() == 2
