"""Hostile input over real HTTP: an API server with DEBUG off, as `make run` starts it,
with the real PostgreSQL and SeaweedFS behind it.

Each test of this folder sends what the worst client could send and checks what that client
sees: a clear 4xx with the contract's code, never a 500 from the parser, never a false 503
that invites retries for ever, and nothing the uploader chose served back to the people who
download. The session's API server, and the hostile client's project.
"""

from __future__ import annotations

import pytest

from tests.factories import Actor, make_actor


@pytest.fixture
def api(api_base: str) -> str:
    return api_base


@pytest.fixture
def actor() -> Actor:
    return make_actor("hostile")
