"""Locks and timeouts, as clients meet them over real HTTP (the API server, PostgreSQL, the store).

- A store that accepts connections and never answers costs a request at most the store
  budget (attempts x (connect + read) timeouts), then 503 STORAGE_UNAVAILABLE, inside
  the API's request timeout (API_TIMEOUT_SECONDS); meanwhile no row lock is held, so other
  requests on the same file go on.
- A request that outlives API_TIMEOUT_SECONDS ends its worker; another serves the next one.
- A statement that runs (or waits for a lock) too long is cut by PostgreSQL's
  statement_timeout and answered, not left hanging.
- download-url takes no row lock: a transaction holding the file's row does not delay it.
- Two multipart completes at once: one publishes, the other is refused, one version.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from django.conf import settings
from django.db import connection, transaction

from events.models import Event
from files.models import File, FileVersion
from tests.factories import Actor, make_actor, png_bytes
from tests.helpers import at_once, start_upload, uploaded_file
from tests.multipart import MIB, complete, put_all, random_bytes, start_multipart
from tests.servers import ROOT, serve_api

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    """A committed project; its in-process client talks to the real store."""
    return make_actor("locks", environment="live")


@pytest.fixture(scope="module")
def hung_store() -> Iterator[str]:
    """An "object store" that completes TCP handshakes (the kernel does, from the backlog)
    and never answers a byte: the worst outage, where only read timeouts end a call."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(128)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


# Short store timeouts, so each test waits out a budget of 2 x (1 + 2) = 6 s rather than the
# defaults' 26 s. The hung store accepts every connection, so each attempt waits its read
# timeout: the call is still waiting (its second attempt) while the rename, sent 1.5 s in, is
# answered.
HUNG_STORE_TIMEOUTS = {
    "SERVICE_STORE_MAX_ATTEMPTS": "2",
    "SERVICE_STORE_CONNECT_TIMEOUT_SECONDS": "1",
    "SERVICE_STORE_READ_TIMEOUT_SECONDS": "2",
}
HUNG_STORE_BUDGET_SECONDS = 2 * (1 + 2)


@pytest.fixture(scope="module")
def hung_api(django_db_setup: None, django_db_blocker: Any, hung_store: str) -> Iterator[str]:
    # Three workers: the point is what the other requests see while one waits for the store.
    with serve_api(workers=3, AWS_S3_ENDPOINT_URL=hung_store, **HUNG_STORE_TIMEOUTS) as base:
        yield base


@pytest.fixture(scope="module")
def short_statements_api(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with serve_api(workers=2, DATABASE_STATEMENT_TIMEOUT_MS="1500") as base:
        yield base


def _call(base: str, actor: Actor, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    return requests.request(
        method,
        base + path,
        json=body,
        headers={"Authorization": f"Bearer {actor.key.raw_key}"},
        timeout=kw.get("timeout", 60),
    )


def _while_the_store_hangs(
    hung_api: str, actor: Actor, path: str, body: Any, file_id: str
) -> tuple[Any, float]:
    """Send ``path`` (which asks the store) in a thread; while it waits, rename the file over
    another worker. Returns the slow call's response and its duration."""
    outcome: dict[str, Any] = {}

    def slow() -> None:
        started = time.monotonic()
        try:
            outcome["response"] = _call(hung_api, actor, "POST", path, body)
        except requests.RequestException as exc:
            outcome["response"] = exc
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=slow)
    thread.start()
    time.sleep(1.5)  # the call is now waiting for the store
    started = time.monotonic()
    renamed = _call(
        hung_api, actor, "PATCH", f"/v1/files/{file_id}", {"filename": "renamed.png"}, timeout=10
    )
    # No lock is held across the store call: the rename does not wait for it.
    assert renamed.status_code == 200, renamed.text
    assert time.monotonic() - started < 5
    thread.join(timeout=90)
    return outcome["response"], outcome["seconds"]


def _assert_storage_unavailable_in_budget(response: Any, seconds: float) -> None:
    assert isinstance(response, requests.Response), f"no answer: {response!r}"
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "STORAGE_UNAVAILABLE"
    assert seconds <= HUNG_STORE_BUDGET_SECONDS + 3
    assert seconds < settings.API_TIMEOUT_SECONDS


def test_a_hung_store_answers_503_in_budget_and_holds_no_lock_on_complete(
    actor: Actor, hung_api: str
) -> None:
    file_id = start_upload(actor, png_bytes())["file"]["id"]

    response, seconds = _while_the_store_hangs(
        hung_api, actor, f"/v1/files/{file_id}/complete", None, file_id
    )

    _assert_storage_unavailable_in_budget(response, seconds)
    assert File.objects.get(id=file_id).status == "pending"  # nothing half-done


def test_a_hung_store_holds_no_lock_on_multipart_complete(actor: Actor, hung_api: str) -> None:
    started = start_multipart(actor, 9 * MIB)
    upload_id, file_id = started["upload"]["id"], started["file"]["id"]
    parts = [{"partNumber": 1, "etag": "a"}, {"partNumber": 2, "etag": "b"}]

    response, seconds = _while_the_store_hangs(
        hung_api, actor, f"/v1/uploads/multipart/{upload_id}/complete", {"parts": parts}, file_id
    )

    _assert_storage_unavailable_in_budget(response, seconds)
    assert File.objects.get(id=file_id).status == "pending"


def test_a_statement_waiting_too_long_is_cut_and_answered(
    actor: Actor, short_statements_api: str
) -> None:
    file_id = start_upload(actor, png_bytes())["file"]["id"]
    with transaction.atomic():
        File.objects.select_for_update().get(id=file_id)  # held until the block ends
        started = time.monotonic()
        response = _call(
            short_statements_api,
            actor,
            "PATCH",
            f"/v1/files/{file_id}",
            {"filename": "x.png"},
            timeout=10,
        )
        seconds = time.monotonic() - started
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert "Retry-After" in response.headers
    assert 1.4 < seconds < 5
    assert File.objects.get(id=file_id).filename != "x.png"


def test_a_request_past_the_api_timeout_ends_its_worker_and_another_serves(
    actor: Actor,
) -> None:
    """With no statement timeout, a PATCH waiting on a held row lock would wait for ever; the
    API's own timeout ends its worker (the client's connection drops, no answer) and the
    server starts another, which serves the next request. Nothing was written."""
    file_id = start_upload(actor, png_bytes())["file"]["id"]
    env = {
        "API_TIMEOUT_SECONDS": "5",
        "DATABASE_STATEMENT_TIMEOUT_MS": "0",
        # The store's budget must fit inside the API's timeout (the settings refuse it else).
        "SERVICE_STORE_CONNECT_TIMEOUT_SECONDS": "1",
        "SERVICE_STORE_READ_TIMEOUT_SECONDS": "1",
    }
    with serve_api(workers=1, **env) as base, transaction.atomic():
        File.objects.select_for_update().get(id=file_id)  # held until the block ends
        started = time.monotonic()
        with pytest.raises(requests.ConnectionError):
            _call(base, actor, "PATCH", f"/v1/files/{file_id}", {"filename": "x.png"})
        assert 5 <= time.monotonic() - started < 15
        deadline = time.monotonic() + 15
        while True:
            try:
                answered = _call(base, actor, "GET", f"/v1/files/{file_id}", timeout=5)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, "no worker came back"
                time.sleep(0.2)
        assert answered.status_code == 200
    assert File.objects.get(id=file_id).filename != "x.png"


def test_download_url_takes_no_row_lock(actor: Actor, short_statements_api: str) -> None:
    file_id = uploaded_file(actor)["id"]
    with transaction.atomic():
        File.objects.select_for_update().get(id=file_id)  # e.g. a slow change of the file
        responses = [
            _call(short_statements_api, actor, "POST", f"/v1/files/{file_id}/download-url", {})
            for _ in range(2)
        ]
    # The row stayed locked throughout: a statement that waited for it would have been cut
    # after 1.5 s and answered 503.
    assert [r.status_code for r in responses] == [200, 200], responses[0].text


def test_two_multipart_completes_at_once_publish_once(actor: Actor) -> None:
    data = random_bytes(9 * MIB)
    started = start_multipart(actor, len(data))
    parts = put_all(started["upload"], data)
    upload_id, file_id = started["upload"]["id"], started["file"]["id"]

    responses = at_once(
        lambda: complete(actor, upload_id, parts), lambda: complete(actor, upload_id, parts)
    )

    assert sorted(r.status_code for r in responses) == [200, 409]
    refused = next(r for r in responses if r.status_code == 409)
    assert refused.json()["error"]["code"] == "UPLOAD_NOT_ACTIVE"
    assert File.objects.get(id=file_id).status == "uploaded"
    assert FileVersion.objects.filter(file_id=file_id).count() == 1
    completed = Event.objects.filter(type="upload.completed", data__uploadId=upload_id)
    assert completed.count() == 1


def test_database_sessions_carry_both_timeouts(db: None) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        statement = cursor.fetchone()
        cursor.execute("SHOW idle_in_transaction_session_timeout")
        idle = cursor.fetchone()
    assert statement == ("15s",)
    assert idle == ("1min",)


def test_a_store_budget_that_outlasts_the_api_timeout_is_refused_at_start() -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
        "API_TIMEOUT_SECONDS": "10",
        "SERVICE_STORE_READ_TIMEOUT_SECONDS": "30",
    }
    run = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert "API_TIMEOUT_SECONDS" in run.stderr
