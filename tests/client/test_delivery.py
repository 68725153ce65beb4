"""Delivery URLs from the Python client and the CLI: signed offline against the guide's test
vectors, the same URLs the API signs, and resolved by the real server to the bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from storage_client import Client
from storage_client.delivery import DeliveryKey
from storage_client.errors import ConfigurationError

from tests.factories import Actor, png_bytes

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "delivery" / "vectors.json").read_text()
)
STORAGE = str(Path(sys.executable).parent / "storage")


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["path"].split("/")[4])
def test_the_client_signs_each_vector_as_the_guide_says(vector: dict[str, Any]) -> None:
    key = DeliveryKey(f"{VECTORS['keyId']}:{VECTORS['secret']}")
    assert key.path(VECTORS["fileId"], **vector["options"]) == vector["path"]
    assert VECTORS["secret"] not in repr(key)


def test_a_malformed_delivery_key_is_refused() -> None:
    for pair in ("dk_x", "dsec_y:dk_x", "dk_x:secret"):
        with pytest.raises(ConfigurationError):
            DeliveryKey(pair)


@pytest.mark.e2e
def test_offline_and_api_urls_are_the_same_and_resolve_to_the_bytes(
    actor: Actor, make_client: Callable[..., Client], tmp_path: Path
) -> None:
    created = actor.post("/v1/delivery-keys", {}).json()["data"]
    pair = f"{created['deliveryKey']['id']}:{created['secret']}"
    source = tmp_path / "dot.png"
    source.write_bytes(png_bytes())
    asking = make_client(actor)
    file = asking.files.upload(source)
    signing = make_client(actor, delivery_key=pair)

    offline = signing.files.delivery_url(file.id, width=40, format="auto")
    assert offline == asking.files.delivery_url(file.id, width=40, format="auto")
    plain = signing.files.delivery_url(file.id)
    assert plain == asking.files.delivery_url(file.id)

    answer = httpx.get(plain, follow_redirects=False)
    assert answer.status_code == 302
    assert httpx.get(answer.headers["Location"]).content == png_bytes()
    forged = plain[:-3] + ("AAA" if not plain.endswith("AAA") else "BBB")
    refused = httpx.get(forged)
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "INVALID_SIGNATURE")
    expiring = signing.files.delivery_url(file.id, expires_in_seconds=120)
    assert httpx.get(expiring, follow_redirects=False).status_code == 302


@pytest.mark.e2e
def test_storage_url_prints_a_delivery_url(
    actor: Actor, make_client: Callable[..., Client], api_base: str, tmp_path: Path
) -> None:
    created = actor.post("/v1/delivery-keys", {}).json()["data"]
    pair = f"{created['deliveryKey']['id']}:{created['secret']}"
    source = tmp_path / "dot.png"
    source.write_bytes(png_bytes())
    client = make_client(actor)
    file = client.files.upload(source)
    env = {**os.environ, "STORAGE_API_KEY": actor.key.raw_key, "STORAGE_BASE_URL": api_base}

    def storage(*args: str, **extra: str) -> str:
        done = subprocess.run(
            [STORAGE, *args], env={**env, **extra}, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    offline = storage("url", file.id, "--width", "400", STORAGE_DELIVERY_KEY=pair)
    by_api = storage("url", file.id, "--width", "400")
    assert offline == by_api == client.files.delivery_url(file.id, width=400)
    assert "/d/" in offline and "/width=400/" in offline
    # Without a key or a delivery option: the presigned download URL, as before.
    assert "/d/" not in storage("url", file.id)
