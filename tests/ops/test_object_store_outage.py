"""The object store goes away during `complete`: a clear 503, the file stays pending, and once
the store is back the same `complete` succeeds with the bytes intact."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest
import requests

from storage_service import objectstore
from tests.factories import Actor
from tests.helpers import download, error_code, start_upload
from tests.proxy import TcpProxy
from tests.storage import storages_with

pytestmark = pytest.mark.e2e


@pytest.fixture
def store_behind_a_proxy(settings: Any) -> Iterator[TcpProxy]:
    endpoint = objectstore.storage().endpoint_url
    real = urlparse(endpoint)
    with TcpProxy((real.hostname or "127.0.0.1", real.port or 80)) as proxy:
        # Clients still PUT to the real store; only the service's own calls go through the proxy.
        settings.STORAGES = storages_with(
            endpoint_url=f"http://127.0.0.1:{proxy.port}", public_endpoint_url=endpoint
        )
        yield proxy


def test_complete_while_the_store_is_away_is_503_and_succeeds_later(
    owner: Actor, store_behind_a_proxy: TcpProxy
) -> None:
    data = b"bytes that arrived before the outage\n"
    started = start_upload(owner, data, contentType="text/plain")
    upload = started["upload"]
    assert requests.put(upload["url"], data=data, headers=upload["headers"], timeout=30).ok
    file_id = started["file"]["id"]

    store_behind_a_proxy.cut()
    refused = owner.post(f"/v1/files/{file_id}/complete")
    assert refused.status_code == 503
    assert error_code(refused) == "STORAGE_UNAVAILABLE"
    assert owner.get(f"/v1/files/{file_id}").json()["data"]["status"] == "pending"

    store_behind_a_proxy.restore()
    completed = owner.post(f"/v1/files/{file_id}/complete")
    assert completed.status_code == 200, completed.json()
    assert completed.json()["data"]["status"] == "uploaded"
    assert download(owner, file_id) == data
