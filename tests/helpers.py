"""Shared steps of the API tests: start, put and complete uploads as a client would."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction

from accounts import throttling
from accounts.bandwidth import bandwidth_fold
from accounts.models import BandwidthUsage
from tests.factories import Actor, png_bytes, upload_body
from tests.storage import get_from, put_to


def within_one_window(seconds: float) -> None:
    """Wait for the next rate-limit window when fewer than ``seconds`` are left of this one:
    budgets are counted in fixed one-minute windows, so counts a test expects hold only
    within one of them."""
    left = throttling.WINDOW_SECONDS - time.time() % throttling.WINDOW_SECONDS
    if left < seconds:
        time.sleep(left + 0.05)


def start_upload(actor: Actor, data: bytes | None = None, **body: Any) -> dict[str, Any]:
    data = png_bytes() if data is None else data
    response = actor.post("/v1/files/upload", upload_body(data, **body))
    assert response.status_code == 201, response.json()
    return response.json()


def uploaded_file(actor: Actor, data: bytes | None = None, **body: Any) -> dict[str, Any]:
    """A file in status uploaded, its bytes really in the store."""
    data = png_bytes() if data is None else data
    started = start_upload(actor, data, **body)
    assert put_to(started["upload"], data).status_code == 200
    completed = actor.post(f"/v1/files/{started['file']['id']}/complete")
    assert completed.status_code == 200, completed.json()
    return actor.get(f"/v1/files/{started['file']['id']}").json()["data"]


def error_code(response: Any) -> str:
    return str(response.json()["error"]["code"])


def download(actor: Actor, file_id: str) -> bytes:
    """The file's bytes as a client gets them: a download URL, then a GET from the store."""
    response = actor.post(f"/v1/files/{file_id}/download-url", {})
    assert response.status_code == 200, response.json()
    fetched = get_from(response.json()["url"])
    assert fetched.status_code == 200
    return fetched.content


def at_once(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls in threads released together; each thread has its own DB connection."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            results[index] = call()
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@contextmanager
def open_in_another_session(work: Callable[[], Any]) -> Iterator[None]:
    """Run ``work`` in a transaction of another database session (a thread of its own) and
    hold that transaction open, its rows and locks with it, until the block ends; then commit."""
    done, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                work()
                done.set()
                assert release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert done.wait(30)
        yield
    finally:
        release.set()
        thread.join(30)


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    """Poll ``condition`` until it returns something truthy (returned), or fail the test
    after ``timeout`` seconds: for work that a real worker or receiver does in its own time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"not met in {timeout} s: {what or condition}")


def register_webhook(actor: Actor, url: str, events: list[str] | None = None) -> tuple[str, str]:
    """Register an endpoint through the API; its id and its signing secret."""
    body: dict[str, object] = {"url": url}
    if events is not None:
        body["events"] = events
    response = actor.post("/v1/webhooks", body)
    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    return data["webhook"]["id"], data["secret"]


def served_downloads(actor: Actor, expected: int) -> int:
    """The actor's project's downloads once the redirects a server process answered are
    folded: a server sends its batch of them every SERVICE_BANDWIDTH_FLUSH_SECONDS, so the
    fold is tried until ``expected`` show, for at most 10 s."""
    deadline = time.monotonic() + 10
    while True:
        bandwidth_fold()
        usage = BandwidthUsage.objects.filter(project=actor.project).first()
        downloads = 0 if usage is None else usage.downloads
        if downloads >= expected or time.monotonic() > deadline:
            return downloads
        time.sleep(0.2)
