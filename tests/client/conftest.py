"""The Python client against the real stack: an API server in its own process (as
`make run` starts it), the real SeaweedFS through presigned URLs, and (where a test asks for
``celery_worker``) the real Celery and webhook workers."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from storage_client import Client

from tests.factories import Actor, make_actor
from tests.servers import SESSION_SERVER_ENV as SERVER_ENV
from tests.servers import serve_api as _serve

MIB = 1024 * 1024


@pytest.fixture
def serve() -> Callable[..., Any]:
    """``with serve(SOME_SETTING="1") as base_url:`` a server of the test's own."""

    def start(**env: str) -> Any:
        return _serve(workers=1, **SERVER_ENV, **env)

    return start


@pytest.fixture
def make_client(api_base: str) -> Iterator[Callable[..., Client]]:
    """``make_client(actor, base_url=None, **options)``: a client with the actor's key."""
    made: list[Client] = []

    def build(actor: Actor, base_url: str | None = None, **options: Any) -> Client:
        client = Client(api_key=actor.key.raw_key, base_url=base_url or api_base, **options)
        made.append(client)
        return client

    yield build
    for client in made:
        client.close()


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    """A project committed to the database, so the server process sees it."""
    return make_actor("client-owner", organization="acme")


@pytest.fixture
def client(actor: Actor, make_client: Callable[..., Client]) -> Client:
    return make_client(actor)


def write_random(path: os.PathLike[str] | str, size: int) -> bytes:
    data = os.urandom(size)
    with open(path, "wb") as out:
        out.write(data)
    return data
