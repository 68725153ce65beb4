"""How a first request of a new size waits: woken the moment the worker commits the variant
(not at the end of its hold), and never holding the last of a process's request threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.test import Client, override_settings

from delivery import resolution
from tests.factories import Actor, make_actor
from tests.helpers import error_code, uploaded_file
from tests.variants.images import encode, stripes
from variants.models import Variant
from variants.services import variant_process

pytestmark = pytest.mark.django_db(transaction=True)
HOLD_MS = 8000


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    return make_actor("delivery-waiter")


def first_request_url(actor: Actor, file_id: str, width: int) -> str:
    signed = actor.post(
        f"/v1/files/{file_id}/delivery-url", {"transform": {"width": width, "format": "png"}}
    )
    assert signed.status_code == 200, signed.json()
    return urlsplit(signed.json()["url"]).path


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``call`` in a thread of its own (its own DB connection), timing it."""
    result: dict[str, Any] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            result["answer"] = call()
        finally:
            result["seconds"] = time.monotonic() - started
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def variant_created(file_id: str, label: str, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = Variant.objects.filter(file_id=file_id, label=label).first()
        if found is not None:
            return found.id
        time.sleep(0.02)
    raise AssertionError(f"no variant {label} was created")


@override_settings(SERVICE_DELIVERY_TRANSFORM_HOLD_MS=HOLD_MS)
def test_the_waiting_request_is_answered_as_soon_as_the_worker_commits(actor: Actor) -> None:
    assert actor.post("/v1/delivery-keys", {}).status_code == 201
    file = uploaded_file(actor, encode(stripes(), "PNG"))
    path = first_request_url(actor, file["id"], 64)
    waiter, result = in_thread(lambda: Client().get(path))
    variant_id = variant_created(file["id"], "w64_cover_png_q80")
    time.sleep(0.3)  # the request is waiting now
    finished = time.monotonic()
    assert variant_process(variant_id=variant_id).status == "ready"
    waiter.join(timeout=HOLD_MS / 1000 + 5)
    answer = result["answer"]
    assert answer.status_code == 302
    assert answer["Cache-Control"] == "public, max-age=60"
    # Woken by the worker's message, not by the end of its 8-second hold.
    assert time.monotonic() - finished < 2, result["seconds"]


@override_settings(SERVICE_DELIVERY_TRANSFORM_HOLD_MS=HOLD_MS)
def test_a_process_never_waits_on_its_last_request_thread(actor: Actor) -> None:
    """While as many requests as the process may hold wait for their variants, another
    first request is answered at once, 503 VARIANT_NOT_READY with Retry-After, and its
    variant is still made for the next request of the URL."""
    assert actor.post("/v1/delivery-keys", {}).status_code == 201
    file = uploaded_file(actor, encode(stripes(), "PNG"))
    waiters = []
    for index in range(resolution.WAITING_PLACES):
        path = first_request_url(actor, file["id"], 40 + index)
        waiters.append(in_thread(lambda path=path: Client().get(path)))  # type: ignore[misc]
        variant_created(file["id"], f"w{40 + index}_cover_png_q80")
    time.sleep(0.3)

    started = time.monotonic()
    refused = Client().get(first_request_url(actor, file["id"], 90))
    assert time.monotonic() - started < 2
    assert (refused.status_code, error_code(refused)) == (503, "VARIANT_NOT_READY")
    assert refused["Retry-After"] == "1"
    assert refused["Cache-Control"] == "no-store"
    overflow = variant_created(file["id"], "w90_cover_png_q80")

    for variant_id in Variant.objects.filter(status="pending").values_list("id", flat=True):
        variant_process(variant_id=variant_id)
    for thread, result in waiters:
        thread.join(timeout=HOLD_MS / 1000 + 5)
        assert result["answer"].status_code == 302
    assert Variant.objects.get(id=overflow).status == "ready"
    assert Client().get(first_request_url(actor, file["id"], 90)).status_code == 302


@override_settings(SERVICE_DELIVERY_TRANSFORM_HOLD_MS=HOLD_MS, SERVICE_DELIVERY_PROJECT_WAITING=2)
def test_one_projects_burst_leaves_other_projects_room_to_wait(actor: Actor) -> None:
    """While as many of a project's first requests wait as the project may have waiting,
    its further first requests are answered at once, 503 VARIANT_NOT_READY with Retry-After,
    their variants still made; another project's first request still waits, and gets its
    302 once its variant is ready."""
    assert resolution.WAITING_PLACES >= 3
    other = make_actor("delivery-other-waiter")
    for owner in (actor, other):
        assert owner.post("/v1/delivery-keys", {}).status_code == 201
    file = uploaded_file(actor, encode(stripes(), "PNG"))
    other_file = uploaded_file(other, encode(stripes(), "PNG"))
    waiters = []
    for width in (40, 41):
        path = first_request_url(actor, file["id"], width)
        waiters.append(in_thread(lambda path=path: Client().get(path)))  # type: ignore[misc]
        variant_created(file["id"], f"w{width}_cover_png_q80")
    time.sleep(0.3)

    refused = [Client().get(first_request_url(actor, file["id"], width)) for width in (50, 51)]
    for answer in refused:
        assert (answer.status_code, error_code(answer)) == (503, "VARIANT_NOT_READY")
        assert answer["Retry-After"] == "1"
        assert answer["Cache-Control"] == "no-store"
    made = [variant_created(file["id"], f"w{width}_cover_png_q80") for width in (50, 51)]

    other_path = first_request_url(other, other_file["id"], 40)
    other_waiter, other_result = in_thread(lambda: Client().get(other_path))
    other_variant = variant_created(other_file["id"], "w40_cover_png_q80")
    time.sleep(0.3)
    assert other_waiter.is_alive()  # waiting, not refused
    assert variant_process(variant_id=other_variant).status == "ready"
    other_waiter.join(timeout=HOLD_MS / 1000 + 5)
    assert other_result["answer"].status_code == 302

    for variant_id in Variant.objects.filter(status="pending").values_list("id", flat=True):
        variant_process(variant_id=variant_id)
    for thread, result in waiters:
        thread.join(timeout=HOLD_MS / 1000 + 5)
        assert result["answer"].status_code == 302
    assert set(Variant.objects.filter(id__in=made).values_list("status", flat=True)) == {"ready"}
    for width in (50, 51):
        assert Client().get(first_request_url(actor, file["id"], width)).status_code == 302
    # The waiting places were given back: the project's next first request waits again.
    path = first_request_url(actor, file["id"], 60)
    waiter, result = in_thread(lambda: Client().get(path))
    variant_id = variant_created(file["id"], "w60_cover_png_q80")
    time.sleep(0.3)
    assert waiter.is_alive()
    assert variant_process(variant_id=variant_id).status == "ready"
    waiter.join(timeout=HOLD_MS / 1000 + 5)
    assert result["answer"].status_code == 302
