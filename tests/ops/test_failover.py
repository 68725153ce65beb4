"""PostgreSQL drops its connections under traffic, or goes away for a moment (a failover):
every answer is a success or a 503 with ``Retry-After``, never a 500; what was answered 2xx is
there; and both clients ride through an outage of a few seconds with their default retries."""

from __future__ import annotations

import io
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from unittest.mock import patch

import pytest
import requests
from celery import Task
from django.conf import settings
from django.db import OperationalError, connection
from storage_client import Client

from files.models import File
from jobs.tasks import run_job
from storage_service.settings.database import database_from_url
from tests.factories import Actor, make_actor
from tests.js.conftest import JS, run_node
from tests.proxy import TcpProxy
from tests.subprocesses import database_url
from webhooks.tasks import replay_step

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# A failover as the clients see it: refused for this long, then answering again.
OUTAGE_SECONDS = 1.5


def terminate_other_sessions() -> int:
    """End every session on the test database but this one: the server's, mid-request or
    idle, as a primary's crash or a failover ends them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


@contextmanager
def proxied_database() -> Iterator[TcpProxy]:
    db = settings.DATABASES["default"]
    if str(db["HOST"]).startswith("/"):
        pytest.skip("the embedded PostgreSQL listens on a unix socket; no TCP to cut")
    with TcpProxy((str(db["HOST"] or "127.0.0.1"), int(str(db["PORT"] or 5432)))) as proxy:
        yield proxy


def restore_later(proxy: TcpProxy, seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, proxy.restore)
    timer.start()
    return timer


def test_sessions_ended_mid_request_answer_503_with_retry_after_never_500(serve: Any) -> None:
    actor = make_actor("failover-kill")
    headers = {"Authorization": f"Bearer {actor.key.raw_key}"}
    body = {"filename": "a.txt", "contentType": "text/plain", "size": 3}
    statuses: Counter[int] = Counter()
    unavailable_without_retry_after: list[str] = []
    created: list[str] = []
    stop = threading.Event()

    def traffic(base: str) -> None:
        api = requests.Session()
        api.headers.update(headers)
        while not stop.is_set():
            for method, path in (
                ("post", "/v1/files/upload"),
                ("get", "/v1/files"),
                ("get", "/v1/me"),
            ):
                response = api.request(method, f"{base}{path}", json=body, timeout=20)
                statuses[response.status_code] += 1
                if response.status_code == 503:
                    code = response.json()["error"]["code"]
                    if code != "SERVICE_UNAVAILABLE" or "Retry-After" not in response.headers:
                        unavailable_without_retry_after.append(response.text)
                elif response.status_code == 201:
                    created.append(response.json()["file"]["id"])

    with serve(workers=2, DATABASE_CONNECT_TIMEOUT="2") as base:
        with ThreadPoolExecutor(max_workers=3) as pool:
            runs = [pool.submit(traffic, base) for _ in range(3)]
            ended = 0
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline:
                ended += terminate_other_sessions()
                time.sleep(0.05)
            stop.set()
            for run in runs:
                run.result()
        # Healed without a restart.
        assert requests.get(f"{base}/v1/me", headers=headers, timeout=10).status_code == 200

    assert ended > 10, f"only {ended} sessions ended: the test cut nothing"
    assert set(statuses) <= {200, 201, 503}, statuses
    assert statuses[503] > 0, f"no request met a dropped session: {statuses}"
    assert statuses[200] + statuses[201] > 0, statuses
    assert not unavailable_without_retry_after, unavailable_without_retry_after[:3]
    # Every upload answered 201 is there.
    stored = set(File.objects.filter(project=actor.project).values_list("id", flat=True))
    assert {str(file_id) for file_id in stored} >= set(created)


def test_the_python_client_rides_through_an_outage_with_its_default_retries(
    serve: Any,
) -> None:
    actor = make_actor("failover-py")
    with proxied_database() as proxy:
        url = database_url(host="127.0.0.1", port=proxy.port)
        with serve(DATABASE_URL=url, DATABASE_CONNECT_TIMEOUT="2") as base:
            client = Client(actor.key.raw_key, base)
            assert client.me()

            proxy.cut()
            timer = restore_later(proxy, OUTAGE_SECONDS)
            started = time.monotonic()
            uploaded = client.files.upload(io.BytesIO(b"still here"), filename="through.txt")
            waited = time.monotonic() - started
            timer.join()

            assert waited >= OUTAGE_SECONDS * 0.8, f"the outage was not met ({waited:.1f} s)"
            assert uploaded.status == "uploaded"
            downloaded = io.BytesIO()
            client.files.download(uploaded.id, downloaded)
            assert downloaded.getvalue() == b"still here"
            client.close()


NODE_SCRIPT = """
import { StorageClient } from "%(dist)s";
const client = new StorageClient();
const started = Date.now();
const file = await client.files.upload(new TextEncoder().encode("js rode through"),
  { filename: "through.txt" });
const waited = (Date.now() - started) / 1000;
const bytes = new TextDecoder().decode(await client.files.download(file.id));
console.log(JSON.stringify({ status: file.status, bytes, waited }));
"""


def test_the_typescript_client_rides_through_an_outage_with_its_default_retries(
    serve: Any, tmp_path: Path
) -> None:
    actor: Actor = make_actor("failover-js")
    script = tmp_path / "through.mjs"
    script.write_text(NODE_SCRIPT % {"dist": (JS / "dist" / "index.js").as_uri()})
    with proxied_database() as proxy:
        url = database_url(host="127.0.0.1", port=proxy.port)
        with serve(DATABASE_URL=url, DATABASE_CONNECT_TIMEOUT="2") as base:
            proxy.cut()
            timer = restore_later(proxy, OUTAGE_SECONDS)
            done = run_node(
                [str(script)],
                env={"STORAGE_API_KEY": actor.key.raw_key, "STORAGE_BASE_URL": base},
                timeout=60,
            )
            timer.join()

    assert done.returncode == 0, done.output
    outcome = json.loads(done.output.strip().splitlines()[-1])
    assert outcome["status"] == "uploaded"
    assert outcome["bytes"] == "js rode through"
    assert outcome["waited"] >= OUTAGE_SECONDS * 0.8, outcome


@pytest.mark.parametrize(
    ("task", "service", "answer"),
    [
        (run_job, "jobs.services.job_run", "done"),
        (replay_step, "webhooks.replay.replay_continue", SimpleNamespace(made=[1])),
    ],
)
def test_a_task_that_meets_the_database_away_runs_again(
    task: Task, service: str, answer: object
) -> None:
    calls = 0

    def away_twice(**kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls <= 2:
            raise OperationalError("connection refused")
        return answer

    with patch(service, side_effect=away_twice):
        result = task.apply(args=("job_or_replay",))
    assert result.successful(), result.traceback
    assert calls == 3


@pytest.mark.parametrize(
    ("url", "host", "port", "attrs"),
    [
        (
            "postgresql://u:p@db1:5433,db2:5434/storage?target_session_attrs=read-write",
            "db1,db2",
            "5433,5434",
            "read-write",
        ),
        ("postgres://u@db1,db2/storage?target_session_attrs=primary", "db1,db2", "", "primary"),
        ("postgres://u@[::1]:5432/storage", "::1", "5432", None),
    ],
)
def test_a_multi_host_url_is_libpqs_host_and_port_lists(
    url: str, host: str, port: str, attrs: str | None
) -> None:
    db = database_from_url(url)
    assert (db["HOST"], db["PORT"], db["NAME"]) == (host, port, "storage")
    assert dict(cast(dict[str, object], db["OPTIONS"])).get("target_session_attrs") == attrs
