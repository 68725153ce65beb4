"""An API server in its own process (as `make run` starts it) for fault tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.servers import serve_api


@pytest.fixture
def serve() -> Callable[..., object]:
    """``with serve(workers=2, SOME_SETTING="1") as base_url:`` runs a real API server."""
    return serve_api
