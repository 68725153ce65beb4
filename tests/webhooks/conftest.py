from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings


@pytest.fixture(autouse=True)
def _private_networks_allowed() -> Iterator[None]:
    """These tests send to a receiver on 127.0.0.1 and register hosts that need no DNS;
    the SSRF tests turn the setting off again for themselves."""
    with override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=True):
        yield
