"""A process keeps the rows a resolution read (delivery/remembered.py): a URL resolved again
reads nothing, and every change of its project shows on the very next resolution, in this
process and on a delivery server of its own. Real commits (transactional tests), real Redis
pub/sub, real SeaweedFS."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
import requests
from django.conf import settings
from django.test import Client, override_settings

from delivery import signing
from delivery.remembered import RememberedRows, process_rows
from delivery.selectors import ResolutionRows, resolution_rows
from events.changes import announce_after_commit, listener_name
from tests.factories import Actor, image_bytes, make_actor, png_bytes
from tests.helpers import error_code, start_upload, uploaded_file
from tests.servers import serve_api
from tests.storage import get_from, put_to

pytestmark = pytest.mark.django_db(transaction=True)
browser = Client()


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    return make_actor("remembering")


@pytest.fixture
def other(transactional_db: None) -> Actor:
    return make_actor("remembering-other")


@pytest.fixture
def remembering() -> Iterator[RememberedRows]:
    """This process keeps resolution rows, as a deployed server does, and hears changes."""
    with override_settings(SERVICE_DELIVERY_REMEMBER_SECONDS=10):
        memory = process_rows()
        assert memory.wait_until_listening(10)
        yield memory
        memory.stop()


def delivery_key(actor: Actor) -> dict[str, Any]:
    created = actor.post("/v1/delivery-keys", {})
    assert created.status_code == 201, created.json()
    return created.json()["data"]


def url_of(actor: Actor, file_id: str) -> str:
    signed = actor.post(f"/v1/files/{file_id}/delivery-url", {})
    assert signed.status_code == 200, signed.json()
    return urlsplit(signed.json()["url"]).path


def eventually(check: Any, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return bool(check())


def test_a_url_resolved_again_reads_nothing_until_its_project_changes(
    actor: Actor, other: Actor, remembering: RememberedRows, django_assert_num_queries: Any
) -> None:
    delivery_key(actor)
    delivery_key(other)
    data = png_bytes()
    url = url_of(actor, uploaded_file(actor, data)["id"])
    with django_assert_num_queries(1):
        assert browser.get(url).status_code == 302
    with django_assert_num_queries(0):
        again = browser.get(url)
    assert again.status_code == 302
    assert get_from(again["Location"]).content == data

    uploaded_file(other)  # another project's change forgets nothing of this one
    with django_assert_num_queries(0):
        assert browser.get(url).status_code == 302
    uploaded_file(actor)  # this project's does
    with django_assert_num_queries(1):
        assert browser.get(url).status_code == 302


def test_revocation_delete_and_replace_show_on_the_next_resolution(
    actor: Actor, remembering: RememberedRows
) -> None:
    key = delivery_key(actor)
    first, second = png_bytes(), image_bytes("PNG", (9, 9))
    file = uploaded_file(actor, first)
    url = url_of(actor, file["id"])
    for _ in range(2):
        assert get_from(browser.get(url)["Location"]).content == first

    started = actor.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": len(second)}
    ).json()
    assert put_to(started["upload"], second).status_code == 200
    assert actor.post(f"/v1/files/{file['id']}/replace/complete").status_code == 200
    assert get_from(browser.get(url)["Location"]).content == second

    other_file = uploaded_file(actor)
    other_url = url_of(actor, other_file["id"])
    assert browser.get(other_url).status_code == 302
    assert actor.delete(f"/v1/files/{other_file['id']}").status_code == 200
    gone = browser.get(other_url)
    assert (gone.status_code, error_code(gone)) == (404, "FILE_NOT_FOUND")

    assert browser.get(url).status_code == 302
    assert actor.delete(f"/v1/delivery-keys/{key['deliveryKey']['id']}").status_code == 200
    refused = browser.get(url)
    assert (refused.status_code, error_code(refused)) == (403, "INVALID_SIGNATURE")


def test_a_file_not_uploaded_yet_is_read_on_every_resolution(
    actor: Actor, remembering: RememberedRows, django_assert_num_queries: Any
) -> None:
    key = delivery_key(actor)
    data = png_bytes()
    started = start_upload(actor, data)
    path = signing.delivery_path(
        key["secret"], key["deliveryKey"]["id"], started["file"]["id"], signing.Options()
    )
    for _ in range(2):
        with django_assert_num_queries(1):
            pending = browser.get(path)
        assert (pending.status_code, error_code(pending)) == (404, "FILE_NOT_FOUND")
    assert put_to(started["upload"], data).status_code == 200
    assert actor.post(f"/v1/files/{started['file']['id']}/complete").status_code == 200
    assert get_from(browser.get(path)["Location"]).content == data


def test_a_read_under_way_when_its_project_changed_is_not_kept(
    actor: Actor, remembering: RememberedRows
) -> None:
    """The read may have seen the rows before the change committed: the next resolution
    reads again."""
    key = delivery_key(actor)
    file = uploaded_file(actor)
    reads: list[str] = []

    def read_while_changed(**wanted: Any) -> ResolutionRows | None:
        rows = resolution_rows(**wanted)
        if not reads:
            announce_after_commit(actor.project.id)  # outside a transaction: at once
        reads.append(wanted["file_id"])
        return rows

    memory = RememberedRows(read=read_while_changed)
    try:
        assert memory.wait_until_listening(10)
        wanted = {"key_id": key["deliveryKey"]["id"], "file_id": file["id"], "version": None}
        for _ in range(3):
            assert memory.rows(**wanted, label=None) is not None
        assert len(reads) == 2  # the raced read, then one kept
    finally:
        memory.stop()


def test_after_losing_redis_nothing_is_kept_until_subscribed_again(
    actor: Actor, remembering: RememberedRows
) -> None:
    key = delivery_key(actor)
    file = uploaded_file(actor)
    reads: list[str] = []

    def counted(**wanted: Any) -> ResolutionRows | None:
        reads.append(wanted["file_id"])
        return resolution_rows(**wanted)

    memory = RememberedRows(read=counted)
    wanted = {"key_id": key["deliveryKey"]["id"], "file_id": file["id"], "version": None}
    try:
        assert memory.wait_until_listening(10)
        memory.rows(**wanted, label=None)
        memory.rows(**wanted, label=None)
        assert len(reads) == 1

        client = redis.Redis.from_url(settings.REDIS_URL)
        mine = [c for c in client.client_list() if c["name"] == listener_name()]
        assert mine, "no listener connection named in CLIENT LIST"
        for connection in mine:  # this process's listeners: the fixture's and this one
            client.client_kill_filter(_id=connection["id"])
        # Lost: what was kept is forgotten, and nothing is kept until subscribed again.
        assert eventually(lambda: (memory.rows(**wanted, label=None), len(reads) >= 2)[1])
        assert memory.wait_until_listening(10)
        before = len(reads)
        memory.rows(**wanted, label=None)
        memory.rows(**wanted, label=None)
        assert len(reads) == before + 1
    finally:
        memory.stop()


def test_a_delivery_server_hears_changes_made_through_the_api(actor: Actor) -> None:
    """Another process keeps the rows; a revocation, a delete and a replace made by this one
    show on its next resolution."""
    key = delivery_key(actor)
    first, second = png_bytes(), image_bytes("PNG", (10, 10))
    file, other = uploaded_file(actor, first), uploaded_file(actor)
    url, other_url = url_of(actor, file["id"]), url_of(actor, other["id"])
    with serve_api(workers=1, role="delivery") as delivery:

        def resolve(path: str) -> requests.Response:
            return requests.get(delivery + path, allow_redirects=False, timeout=10)

        for _ in range(3):
            assert get_from(resolve(url).headers["Location"]).content == first
            assert resolve(other_url).status_code == 302

        started = actor.post(
            f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": len(second)}
        ).json()
        assert put_to(started["upload"], second).status_code == 200
        assert actor.post(f"/v1/files/{file['id']}/replace/complete").status_code == 200
        assert get_from(resolve(url).headers["Location"]).content == second

        assert actor.delete(f"/v1/files/{other['id']}").status_code == 200
        gone = resolve(other_url)
        assert (gone.status_code, gone.json()["error"]["code"]) == (404, "FILE_NOT_FOUND")

        assert resolve(url).status_code == 302
        assert actor.delete(f"/v1/delivery-keys/{key['deliveryKey']['id']}").status_code == 200
        refused = resolve(url)
        assert (refused.status_code, refused.json()["error"]["code"]) == (
            403,
            "INVALID_SIGNATURE",
        )
