"""/healthz and /readyz: no key needed; readiness names the dependency that is down."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from django.test import Client
from django.test.utils import override_settings

from storage_service import health
from tests.factories import Actor
from tests.storage import storages_with

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_probe_clients() -> Iterator[None]:
    health._redis.cache_clear()
    yield
    health._redis.cache_clear()


def test_healthz_answers_without_a_key() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response["X-Request-Id"]


def test_readyz_reports_every_dependency_ok() -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "ok"
    assert {name: check["status"] for name, check in body["checks"].items()} == {
        "database": "ok",
        "redis": "ok",
        "objectStore": "ok",
    }


def test_readyz_is_503_with_the_error_body_when_redis_is_down() -> None:
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = Client().get("/readyz")
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "SERVICE_UNAVAILABLE"
    assert "redis" in error["message"]
    assert error["details"]["checks"]["redis"]["status"] == "unavailable"
    assert error["details"]["checks"]["database"]["status"] == "ok"
    assert response["Retry-After"]


def test_readyz_is_503_when_the_object_store_is_down() -> None:
    with override_settings(STORAGES=storages_with(endpoint_url="http://127.0.0.1:1")):
        response = Client().get("/readyz")
    assert response.status_code == 503
    checks = response.json()["error"]["details"]["checks"]
    assert checks["objectStore"]["status"] == "unavailable"
    assert checks["redis"]["status"] == "ok"


def test_probes_only_answer_get_and_head(owner: Actor) -> None:
    assert Client().post("/healthz").status_code == 405
    assert Client().head("/readyz").status_code == 200


def test_readyz_answers_in_time_while_the_object_store_hangs() -> None:
    """A store that accepts connections and never answers: each probe says so within its
    timeout, not after the store client's whole budget."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        endpoint = f"http://127.0.0.1:{hung.getsockname()[1]}"
        with override_settings(STORAGES=storages_with(endpoint_url=endpoint)):
            for _ in range(2):  # the second joins the first's HEAD, still waiting
                started = time.monotonic()
                response = Client().get("/readyz")
                took = time.monotonic() - started
                assert response.status_code == 503
                check = response.json()["error"]["details"]["checks"]["objectStore"]
                assert (check["status"], check["error"]) == ("unavailable", "TimeoutError")
                assert took < health.PROBE_TIMEOUT_SECONDS + 1.5
