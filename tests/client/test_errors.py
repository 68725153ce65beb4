"""Each error class, raised from a real answer of the service, and the client's retries."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import storage_client
from django.conf import settings
from storage_client import (
    AuthenticationError,
    Client,
    ConfigurationError,
    ConflictError,
    NetworkError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    ServiceUnavailableError,
    StorageError,
    UnprocessableError,
    ValidationError,
)

from tests.factories import Actor
from tests.helpers import within_one_window
from tests.proxy import TcpProxy
from tests.servers import free_port
from tests.subprocesses import database_url

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def assert_api_error(exc: StorageError, status: int, code: str) -> None:
    assert (exc.status, exc.code) == (status, code)
    assert exc.message and exc.request_id and exc.request_id.startswith("req_")
    assert code in str(exc) and exc.request_id in str(exc)


def test_validation_error_names_the_bad_field(client: Client) -> None:
    with pytest.raises(ValidationError) as caught:
        client.files.upload(io.BytesIO(b"x"), filename="a/b.txt")
    assert_api_error(caught.value, 400, "VALIDATION_ERROR")
    assert "filename" in caught.value.details


def test_authentication_error(api_base: str) -> None:
    with pytest.raises(AuthenticationError) as caught:
        Client(api_key="sk_test_not-a-key", base_url=api_base).me()
    assert_api_error(caught.value, 401, "UNAUTHENTICATED")


def test_not_found_error(client: Client) -> None:
    with pytest.raises(NotFoundError) as caught:
        client.files.get("file_00000000000000000000000000")
    assert_api_error(caught.value, 404, "FILE_NOT_FOUND")


def test_conflict_error(client: Client) -> None:
    file = client.files.upload(io.BytesIO(b"here"), filename="here.txt")
    with pytest.raises(ConflictError) as caught:
        client.files.restore(file.id)
    assert_api_error(caught.value, 409, "FILE_NOT_DELETED")


def test_permission_denied_error(client: Client, api_base: str) -> None:
    for n in range(20):
        client.webhooks.create(f"http://127.0.0.1:9/hook/{n}")
    with pytest.raises(PermissionDeniedError) as caught:
        client.webhooks.create("http://127.0.0.1:9/hook/21")
    assert_api_error(caught.value, 403, "WEBHOOK_LIMIT_REACHED")


def test_payload_too_large_error(client: Client, tmp_path: Path) -> None:
    file = client.files.upload(io.BytesIO(b"small"), filename="grow.bin")
    huge = tmp_path / "huge.bin"
    with open(huge, "wb") as out:  # sparse: nothing is written, nothing is sent
        out.truncate(settings.SERVICE_MAX_SINGLE_UPLOAD_BYTES + 1)
    with pytest.raises(PayloadTooLargeError) as caught:
        client.files.replace(file.id, huge)
    assert_api_error(caught.value, 413, "FILE_TOO_LARGE")


def test_unprocessable_error(client: Client) -> None:
    file = client.files.upload(io.BytesIO(b"not an image"), filename="notes.txt")
    with pytest.raises(UnprocessableError) as caught:
        client.variants.create(file.id, width=100)
    assert_api_error(caught.value, 422, "NOT_PROCESSABLE")


def test_rate_limited_error_carries_retry_after(actor: Actor, make_client: Any, serve: Any) -> None:
    with serve(SERVICE_RATE_LIMIT_READS_PER_MINUTE="1") as base:
        client = make_client(actor, base_url=base, max_retries=0)
        within_one_window(5)
        client.me()
        with pytest.raises(RateLimitedError) as caught:
            client.me()
    assert_api_error(caught.value, 429, "RATE_LIMITED")
    assert caught.value.retry_after is not None and 0 < caught.value.retry_after <= 60


def test_service_unavailable_is_retried_until_the_database_is_back(
    actor: Actor, make_client: Any, serve: Any
) -> None:
    db = settings.DATABASES["default"]
    if str(db["HOST"]).startswith("/"):
        pytest.skip("the embedded PostgreSQL listens on a unix socket; no TCP to cut")
    with TcpProxy((str(db["HOST"] or "127.0.0.1"), int(str(db["PORT"] or 5432)))) as proxy:
        url = database_url(host="127.0.0.1", port=proxy.port)
        with serve(DATABASE_URL=url, DATABASE_CONNECT_TIMEOUT="2") as base:
            impatient = make_client(actor, base_url=base, max_retries=0)
            patient = make_client(actor, base_url=base, max_retries=5)
            assert impatient.me()["project"]["id"] == actor.project.id

            proxy.cut()
            with pytest.raises(ServiceUnavailableError) as caught:
                impatient.me()
            assert_api_error(caught.value, 503, "SERVICE_UNAVAILABLE")
            assert caught.value.retry_after == 1

            threading.Timer(1.5, proxy.restore).start()
            started = time.monotonic()
            assert patient.me()["project"]["id"] == actor.project.id  # after Retry-After
            assert time.monotonic() - started >= 1.0


def test_network_error_when_nothing_answers(actor: Actor) -> None:
    client = Client(
        api_key=actor.key.raw_key, base_url=f"http://127.0.0.1:{free_port()}", max_retries=1
    )
    with pytest.raises(NetworkError) as caught:
        client.me()
    assert caught.value.status is None


def test_configuration_error_without_key_or_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STORAGE_API_KEY", raising=False)
    monkeypatch.delenv("STORAGE_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="STORAGE_API_KEY"):
        Client(base_url="http://127.0.0.1:1")
    with pytest.raises(ConfigurationError, match="STORAGE_BASE_URL"):
        Client(api_key="sk_test_x")


def test_key_and_url_come_from_the_environment(
    actor: Actor, api_base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_API_KEY", actor.key.raw_key)
    monkeypatch.setenv("STORAGE_BASE_URL", api_base + "/v1/")
    with Client() as client:
        assert client.me()["project"]["id"] == actor.project.id


def test_every_error_is_a_storage_error() -> None:
    for name in storage_client.__all__:
        value = getattr(storage_client, name)
        if isinstance(value, type) and name.endswith("Error"):
            assert issubclass(value, StorageError), name


# --- Retries of 429, against a scripted HTTP server -------------------------------------------
# The service's own Retry-After for 429 is the rest of its one-minute window (up to 60 s),
# too long to wait for in the suite; this server answers what the test scripts.


@contextmanager
def scripted(*answers: tuple[int, dict[str, str]]) -> Iterator[list[float]]:
    """Answers each request with the next (status, headers), then 200 with {"data": {}}."""
    script = list(answers)
    arrivals: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            arrivals.append(time.monotonic())
            status, headers = script.pop(0) if script else (200, {})
            body = json.dumps(
                {"data": {"ok": True}}
                if status == 200
                else {"error": {"code": "RATE_LIMITED", "message": "Slow down."}}
            ).encode()
            self.send_response(status)
            for name, value in {**headers, "Content-Type": "application/json"}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        arrivals.append(float(server.server_address[1]))  # the port, first
        yield arrivals
    finally:
        server.shutdown()
        server.server_close()


def test_429_is_retried_after_retry_after() -> None:
    with scripted((429, {"Retry-After": "1"}), (429, {"Retry-After": "0"})) as arrivals:
        port = int(arrivals.pop(0))
        client = Client(api_key="sk_test_x", base_url=f"http://127.0.0.1:{port}")
        assert client.me() == {"ok": True}
    assert len(arrivals) == 3
    assert arrivals[1] - arrivals[0] >= 1.0


def test_429_past_the_retry_limit_raises() -> None:
    with scripted(*[(429, {"Retry-After": "0"})] * 10) as arrivals:
        port = int(arrivals.pop(0))
        client = Client(api_key="sk_test_x", base_url=f"http://127.0.0.1:{port}", max_retries=2)
        with pytest.raises(RateLimitedError) as caught:
            client.me()
    assert len(arrivals) == 3  # the request and two retries
    assert caught.value.code == "RATE_LIMITED" and caught.value.retry_after == 0


def test_a_retry_after_longer_than_the_client_waits_raises_at_once() -> None:
    with scripted((429, {"Retry-After": "3600"})) as arrivals:
        port = int(arrivals.pop(0))
        client = Client(api_key="sk_test_x", base_url=f"http://127.0.0.1:{port}", max_retry_wait=5)
        with pytest.raises(RateLimitedError):
            client.me()
    assert len(arrivals) == 1
