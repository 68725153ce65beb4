"""A delivery server (`python -m storage_service.serving --role delivery`) answers delivery
URLs as the API does, and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import requests
from django.conf import settings
from django.db import connection

from tests.factories import Actor, make_actor
from tests.helpers import uploaded_file
from tests.proxy import TcpProxy
from tests.servers import serve_api
from tests.storage import get_from
from tests.subprocesses import database_url

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    return make_actor("served-apart")


@pytest.fixture
def delivery(transactional_db: None) -> Iterator[str]:
    with serve_api(workers=1, role="delivery") as base:
        yield base


def test_the_delivery_server_resolves_urls_and_refuses_with_the_error_body(
    actor: Actor, delivery: str
) -> None:
    actor.post("/v1/delivery-keys", {})
    data = b"served apart"
    file = uploaded_file(actor, data)
    path = urlsplit(actor.post(f"/v1/files/{file['id']}/delivery-url", {}).json()["url"]).path

    answer = requests.get(delivery + path, allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    assert answer.headers["Cache-Control"] == "public, max-age=60"
    assert answer.headers["X-Request-Id"].startswith("req_")
    assert get_from(answer.headers["Location"]).content == data

    forged = requests.get(delivery + path[:-2] + "xx", allow_redirects=False, timeout=10)
    assert forged.status_code == 403
    assert forged.json()["error"]["code"] == "INVALID_SIGNATURE"
    assert forged.headers["Cache-Control"] == "no-store"
    posted = requests.post(delivery + path, timeout=10)
    assert (posted.status_code, posted.json()["error"]["code"]) == (405, "METHOD_NOT_ALLOWED")


def test_the_delivery_server_answers_nothing_else_but_its_probes(delivery: str) -> None:
    for path in ("/v1/files", "/v1/me", "/admin/", "/docs", "/", "/d/x"):
        answer = requests.get(delivery + path, allow_redirects=False, timeout=10)
        assert answer.status_code == 404, path
        assert answer.json()["error"]["code"] == "NOT_FOUND"
        posted = requests.post(delivery + path, json={}, timeout=10)
        assert (posted.status_code, posted.json()["error"]["code"]) == (404, "NOT_FOUND")
    assert requests.get(f"{delivery}/healthz", timeout=10).status_code == 200
    assert requests.get(f"{delivery}/readyz", timeout=10).status_code == 200


def test_a_connection_postgresql_closed_is_replaced_within_the_request(actor: Actor) -> None:
    """A delivery server checks no connection before a request: a resolution that finds its
    connection closed (a restart, a failover) reads again on a new one, and still answers."""
    actor.post("/v1/delivery-keys", {})
    path = urlsplit(
        actor.post(f"/v1/files/{uploaded_file(actor)['id']}/delivery-url", {}).json()["url"]
    ).path
    separator = "&" if "?" in database_url() else "?"
    named = f"{database_url()}{separator}application_name=delivery-under-test"
    with serve_api(workers=1, role="delivery", DATABASE_URL=named) as delivery:
        for _ in range(8):  # a connection held by each of the worker's threads
            assert requests.get(delivery + path, allow_redirects=False, timeout=10).ok
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = %s",
                ["delivery-under-test"],
            )
            (closed,) = cursor.fetchone()
        assert closed >= 1
        answers = [
            requests.get(delivery + path, allow_redirects=False, timeout=10).status_code
            for _ in range(8)
        ]
    assert answers == [302] * 8


def test_the_delivery_server_answers_503_while_postgresql_is_away(actor: Actor) -> None:
    db = settings.DATABASES["default"]
    if str(db["HOST"]).startswith("/"):
        pytest.skip("the embedded PostgreSQL listens on a unix socket; no TCP to cut")
    actor.post("/v1/delivery-keys", {})
    path = urlsplit(
        actor.post(f"/v1/files/{uploaded_file(actor)['id']}/delivery-url", {}).json()["url"]
    ).path
    with TcpProxy((str(db["HOST"] or "127.0.0.1"), int(str(db["PORT"] or 5432)))) as proxy:
        url = database_url(host="127.0.0.1", port=proxy.port)
        with serve_api(
            workers=1, role="delivery", DATABASE_URL=url, DATABASE_CONNECT_TIMEOUT="2"
        ) as delivery:
            assert requests.get(delivery + path, allow_redirects=False, timeout=10).ok
            proxy.cut()
            away = requests.get(delivery + path, allow_redirects=False, timeout=15)
            assert away.status_code == 503, away.text
            assert away.json()["error"]["code"] == "SERVICE_UNAVAILABLE"
            assert away.headers["Retry-After"] == "1"
            assert away.headers["Cache-Control"] == "no-store"
            proxy.restore()
            back = requests.get(delivery + path, allow_redirects=False, timeout=10)
            assert back.status_code == 302
