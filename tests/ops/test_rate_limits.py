"""Per-key budgets for reads and writes, shared by every API process through Redis."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from django.test.utils import override_settings

from tests.factories import Actor, make_actor
from tests.helpers import error_code

pytestmark = pytest.mark.django_db


@override_settings(SERVICE_RATE_LIMIT_WRITES_PER_MINUTE=3, SERVICE_RATE_LIMIT_READS_PER_MINUTE=5)
def test_writes_past_the_budget_answer_429_with_retry_after(owner: Actor, sibling: Actor) -> None:
    for _ in range(3):
        # Refused bodies still count: the budget protects the service, not the outcome.
        assert owner.post("/v1/files/upload", {}).status_code == 400
    limited = owner.post("/v1/files/upload", {})
    assert limited.status_code == 429
    assert error_code(limited) == "RATE_LIMITED"
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert limited["X-Request-Id"]
    # Reads have their own budget, and another key its own counters.
    assert owner.get("/v1/me").status_code == 200
    assert sibling.post("/v1/files/upload", {}).status_code == 400


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=5)
def test_reads_have_their_own_budget(owner: Actor) -> None:
    statuses = [owner.get("/v1/me").status_code for _ in range(7)]
    assert statuses == [200] * 5 + [429] * 2


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=0)
def test_a_zero_budget_means_unlimited(owner: Actor) -> None:
    assert all(owner.get("/v1/me").status_code == 200 for _ in range(20))


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=2, REDIS_URL="redis://127.0.0.1:1/0")
def test_requests_pass_when_redis_is_down(owner: Actor) -> None:
    from storage_service import throttling

    throttling.reset_client()
    try:
        assert all(owner.get("/v1/me").status_code == 200 for _ in range(4))
    finally:
        throttling.reset_client()


def test_unauthenticated_requests_are_not_counted_but_refused(owner: Actor) -> None:
    from django.test import Client

    assert Client().get("/v1/me").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_the_budget_is_shared_across_api_processes(serve: Any) -> None:
    actor = make_actor("rate-limited")
    headers = {"Authorization": f"Bearer {actor.key.raw_key}"}
    with serve(workers=2, SERVICE_RATE_LIMIT_READS_PER_MINUTE="6") as base:
        statuses = []
        for _ in range(10):
            # A new connection each time, so gunicorn spreads them over both workers.
            statuses.append(requests.get(f"{base}/v1/me", headers=headers, timeout=10).status_code)
    assert statuses.count(200) == 6
    assert statuses.count(429) == 4
