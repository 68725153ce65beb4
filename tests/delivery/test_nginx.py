"""Debian's nginx in front of the API and a delivery server with
deploy/nginx/storage-delivery.conf: delivery URLs go to the delivery server and their
redirects are cached by their Cache-Control, for real; the rest goes to the API (`make test`
installs nginx)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from scripts.servers.nginx import nginx_binary, nginx_in_front
from tests.factories import Actor, make_actor
from tests.helpers import served_downloads, uploaded_file
from tests.servers import serve_api
from tests.storage import get_from, put_to
from tests.variants.images import encode, stripes

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

MAX_AGE = (
    2  # the delivery server's SERVICE_DELIVERY_CURRENT_MAX_AGE here, so expiry is quick to see
)
# nginx counts a copy's life in whole seconds of its clock: a copy may outlive its max-age by
# up to one second.
EXPIRED = MAX_AGE + 1.5


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    return make_actor("behind-nginx")


@pytest.fixture
def nginx(transactional_db: None, tmp_path: Path) -> Iterator[str]:
    """nginx on a free port, in front of an API server and a delivery server of the test's
    own."""
    if nginx_binary() is None:
        pytest.fail("nginx is not installed: `make nginx` installs Debian's")
    with (
        serve_api(workers=1) as api,
        serve_api(
            workers=1, role="delivery", SERVICE_DELIVERY_CURRENT_MAX_AGE=str(MAX_AGE)
        ) as delivery,
        nginx_in_front(api=api, delivery=delivery, directory=tmp_path) as server,
    ):
        yield server.base_url


def test_redirects_are_cached_replaces_show_and_revocation_ends_at_expiry(
    actor: Actor, nginx: str
) -> None:
    key = actor.post("/v1/delivery-keys", {}).json()["data"]["deliveryKey"]["id"]
    first, second = encode(stripes((30, 10)), "PNG"), encode(stripes((60, 20)), "PNG")
    file = uploaded_file(actor, first)
    path = urlsplit(actor.post(f"/v1/files/{file['id']}/delivery-url", {}).json()["url"]).path
    url = nginx + path

    def resolve() -> requests.Response:
        return requests.get(url, allow_redirects=False, timeout=10)

    missed, hit = resolve(), resolve()
    assert (missed.status_code, missed.headers["X-Cache-Status"]) == (302, "MISS")
    assert (hit.status_code, hit.headers["X-Cache-Status"]) == (302, "HIT")
    assert hit.headers["Location"] == missed.headers["Location"]
    assert get_from(hit.headers["Location"]).content == first
    # The delivery server saw one resolution: the second never reached it (its bytes, once
    # the server has sent its batch and it is folded).
    assert served_downloads(actor, 1) == 1
    # Everything else is the API's, which the delivery server does not answer.
    assert requests.get(f"{nginx}/v1/me", timeout=10).json()["error"]["code"] == "UNAUTHENTICATED"

    started = actor.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": len(second)}
    ).json()
    assert put_to(started["upload"], second).status_code == 200
    assert actor.post(f"/v1/files/{file['id']}/replace/complete").status_code == 200
    time.sleep(EXPIRED)
    renewed = resolve()
    assert renewed.headers["X-Cache-Status"] in {"EXPIRED", "MISS"}
    assert get_from(renewed.headers["Location"]).content == second

    assert actor.delete(f"/v1/delivery-keys/{key}").status_code == 200
    held = resolve()
    assert held.status_code == 302, held.text  # the cached copy, until its max-age runs out
    time.sleep(EXPIRED)
    for _ in range(2):  # refusals are never cached
        refused = resolve()
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "INVALID_SIGNATURE"
        assert refused.headers["X-Cache-Status"] in {"EXPIRED", "MISS"}
