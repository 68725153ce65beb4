"""Webhooks as a hostile client would use them, over real HTTP: the API as `make run` serves it,
with private networks refused (the test profile's default), deliveries sent by the real
Celery webhook worker to real HTTP receivers.

- SSRF: no URL reaching a private address registers, however the address is written (IPv6
  forms that embed an IPv4 address included), and the refusal never says what a name
  resolved to (no DNS oracle).
- A URL that registers can be sent: non-ASCII is refused at registration.
- The 20-endpoint limit is checked before any DNS lookup.
- One project's hanging receiver does not delay another project's deliveries.
- An endpoint that answers 410 Gone, or has failed for days, is disabled, says so, and can
  be re-enabled.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from functools import partial
from typing import Any
from unittest import mock

import pytest
import requests
from django.db import transaction
from django.utils import timezone

from events.services import event_record
from tests import helpers
from tests.factories import Actor, make_actor
from tests.servers import serve_api
from tests.webhook_receiver import Answer, Receiver, running_receiver
from webhooks import network
from webhooks.models import Delivery, Endpoint
from webhooks.network import HOST_REFUSED, UrlRefused
from webhooks.services import MAX_ENDPOINTS_PER_PROJECT

pytestmark = pytest.mark.django_db(transaction=True)


class Api:
    """A project's key against the served API."""

    def __init__(self, base: str, actor: Actor) -> None:
        self.base = base
        self.actor = actor
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {actor.key.raw_key}"

    def post(self, path: str, body: Any = None) -> requests.Response:
        return self.session.post(f"{self.base}{path}", json=body, timeout=30)

    def get(self, path: str) -> requests.Response:
        return self.session.get(f"{self.base}{path}", timeout=30)

    def register(self, url: str, events: list[str] | None = None) -> requests.Response:
        body: dict[str, Any] = {"url": url}
        if events is not None:
            body["events"] = events
        return self.post("/v1/webhooks", body)


@pytest.fixture(scope="module")
def base_url(django_db_setup: None) -> Iterator[str]:
    """The API with private networks refused, as in production."""
    with serve_api(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS="false") as base:
        yield base


@pytest.fixture
def allowing_url(api_base: str) -> str:
    """The API with private networks allowed (the dev profile's default): the session's."""
    return api_base


@pytest.fixture
def api(base_url: str) -> Api:
    return Api(base_url, make_actor("hostile"))


# --- SSRF -------------------------------------------------------------------------------------

# Every way to write an address of our own network that a resolver or a router would follow.
EMBEDDED_AND_LOCAL = {
    "6to4 of 127.0.0.1": "[2002:7f00:1::]",
    "6to4 of 10.0.0.1": "[2002:a00:1::1]",
    "6to4 of the metadata address": "[2002:a9fe:a9fe::]",
    "site-local": "[fec0::1]",
    "site-local, upper": "[feff:ffff::1]",
    "NAT64 of 127.0.0.1": "[64:ff9b::7f00:1]",
    "NAT64 of 10.1.2.3, dotted": "[64:ff9b::10.1.2.3]",
    "NAT64 of the metadata address": "[64:ff9b::a9fe:a9fe]",
    "local-use NAT64": "[64:ff9b:1::808:808]",
    "Teredo": "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
    "Teredo carrying 127.0.0.1": "[2001:0:7f00:1::80ff:fffe]",
    "IPv4-compatible 127.0.0.1": "[::127.0.0.1]",
    "IPv4-compatible 10.0.0.1, hex": "[::a00:1]",
    "IPv4-mapped 127.0.0.1, hex": "[::ffff:7f00:1]",
    "IPv4-translated 127.0.0.1": "[::ffff:0:7f00:1]",
    "IPv4-translated 192.168.0.1": "[::ffff:0:192.168.0.1]",
}


@pytest.mark.parametrize("host", EMBEDDED_AND_LOCAL.values(), ids=EMBEDDED_AND_LOCAL.keys())
def test_no_ipv6_form_of_a_private_address_registers(api: Api, host: str) -> None:
    for url in (f"http://{host}/hook", f"https://{host}:8443/x"):
        response = api.register(url)

        assert response.status_code == 400, (url, response.text)
        error = response.json()["error"]
        assert error["code"] == "VALIDATION_ERROR"
        assert error["details"]["url"] == [HOST_REFUSED]
    assert api.get("/v1/webhooks").json()["data"] == []


@pytest.mark.parametrize(
    "host",
    ["[2002:808:808::1]", "[64:ff9b::8.8.8.8]", "[2606:4700:4700::1111]"],
    ids=["6to4 of 8.8.8.8", "NAT64 of 8.8.8.8", "public IPv6"],
)
def test_embedded_public_addresses_still_register(api: Api, host: str) -> None:
    assert api.register(f"https://{host}/hook").status_code == 201


def test_the_refusal_is_one_fixed_message_that_reveals_no_address(api: Api) -> None:
    """A name resolving to loopback and a name that does not resolve answer alike: a client
    cannot learn what (or whether) our resolver answers for a name."""
    answers = [
        api.register("http://localhost:9/hook"),
        api.register("http://no-such-host.invalid/hook"),
        api.register("http://127.0.0.1/hook"),
        api.register("http://[::1]/hook"),
    ]
    bodies = [answer.json()["error"] for answer in answers]

    assert {answer.status_code for answer in answers} == {400}
    assert {error["message"] for error in bodies} == {HOST_REFUSED}
    assert all(error["details"] == {"url": [HOST_REFUSED]} for error in bodies)
    for answer in answers:
        for leak in ("127.0.0.1", "::1", "loopback", "resolve to 1", "does not resolve"):
            assert leak not in answer.text


NEVER_SENDABLE = {
    "non-ASCII host": "https://bücher.example/hook",
    "non-ASCII path": "https://example.com/hüök",
    "non-ASCII query": "https://example.com/hook?q=ü",
    "full-width dot": "https://example\uff0ecom/hook",
    "percent-encoded host": "https://exa%6dple.com/hook",
    "port 0": "https://example.com:0/hook",
    "label of 64 characters": f"https://{'a' * 64}.example.com/hook",
    "empty label": "https://example..com/hook",
}


@pytest.mark.parametrize("url", NEVER_SENDABLE.values(), ids=NEVER_SENDABLE.keys())
def test_a_url_that_could_never_be_sent_does_not_register(
    base_url: str, allowing_url: str, url: str
) -> None:
    """Refused whether or not private networks are allowed: the shape alone rules it out."""
    actor = make_actor("shapes")
    for base in (base_url, allowing_url):
        response = Api(base, actor).register(url)
        assert response.status_code == 400, (base, url, response.text)
        assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert not Endpoint.objects.filter(project=actor.project).exists()


def test_an_idna_host_is_registered_in_its_ascii_form(api: Api) -> None:
    """The xn-- form is an ordinary ASCII name: checked like any other (here: it does not
    resolve, so it is refused with the same message)."""
    response = api.register("https://xn--bcher-kva.invalid/hook")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["url"] == [HOST_REFUSED]


def test_the_endpoint_limit_is_checked_before_any_lookup(api: Api) -> None:
    for _ in range(MAX_ENDPOINTS_PER_PROJECT):
        Endpoint.objects.create(
            **api.actor.tenant.owner(), url="https://93.184.215.14/hook", secret="whsec_x"
        )

    # A name the resolver would have to look up (and refuse): the limit answers first.
    response = api.register("https://no-such-host.invalid/hook")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "WEBHOOK_LIMIT_REACHED"


def test_a_lookup_that_hangs_is_abandoned_after_the_timeout(settings: Any) -> None:
    """getaddrinfo cannot be interrupted: the lookup runs on the resolver's own thread and
    the caller stops waiting (a resolver that answers after 30 s is stood in for here; the
    machine's resolver cannot be made to hang from a test)."""
    settings.SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    settings.SERVICE_WEBHOOK_RESOLVE_TIMEOUT_SECONDS = 1
    released = False

    def slow(*args: object, **kwargs: object) -> list[Any]:
        deadline = time.monotonic() + 30
        while not released and time.monotonic() < deadline:
            time.sleep(0.05)
        return []

    started = time.monotonic()
    try:
        with (
            mock.patch.object(network.socket, "getaddrinfo", slow),
            pytest.raises(UrlRefused) as refused,
        ):
            network.validate_webhook_url("https://slow-dns.example/hook")
    finally:
        released = True
    assert time.monotonic() - started < 3
    assert str(refused.value) == HOST_REFUSED


# --- Fairness ---------------------------------------------------------------------------------


def committed_event(actor: Actor, type: str = "file.created") -> None:
    """An event and its deliveries, committed: the message goes to the real worker."""
    with transaction.atomic():
        event_record(tenant=actor.tenant, type=type, data={"fileId": "file_x"})


def test_a_hanging_receiver_does_not_delay_another_projects_deliveries(
    celery_worker: Any,
) -> None:
    """Project A's receiver answers after 8 s; A has many events in flight. Project B's
    event still arrives at once: A holds a few of the worker's sending slots, not its task
    threads nor all its slots."""
    slow_a = make_actor("slow")
    quick_b = make_actor("quick")
    with running_receiver() as receiver:
        receiver.default = Answer(200, delay=8.0)
        receiver.script("/b", Answer(200))
        Endpoint.objects.create(**slow_a.tenant.owner(), url=receiver.url("/a"), secret="whsec_a")
        Endpoint.objects.create(
            **quick_b.tenant.owner(),
            url=f"http://localhost:{receiver.port}/b",
            secret="whsec_b",
        )
        for _ in range(24):
            committed_event(slow_a)
        time.sleep(0.5)  # A's messages are taken first

        sent = time.time()
        committed_event(quick_b)
        arrived = receiver.wait_for("/b", 1, timeout=20)

        assert arrived[0].at - sent < 3.0
        # A's own deliveries are capped (16 by default), not lost: the rest wait their turn.
        assert len(receiver.at("/a")) <= 16


# --- Endpoints that fail ----------------------------------------------------------------------


wait_until = partial(helpers.wait_for, timeout=20.0)


def test_a_410_disables_the_endpoint_at_once_says_so_and_can_be_re_enabled(
    celery_worker: Any, receiver: Receiver, allowing_url: str
) -> None:
    actor = make_actor("gone")
    api = Api(allowing_url, actor)
    gone = api.register(receiver.url("/gone"), events=["file.created"]).json()["data"]
    watch = api.register(receiver.url("/watch"), events=["webhook_endpoint.disabled"])
    assert watch.status_code == 201
    webhook_id = gone["webhook"]["id"]
    receiver.script("/gone", Answer(410))

    committed_event(actor)
    notice = receiver.wait_for("/watch", 1)[0].json()

    assert notice["type"] == "webhook_endpoint.disabled"
    assert notice["data"]["webhookId"] == webhook_id
    assert notice["data"]["reason"] == "GONE"
    shown = api.get(f"/v1/webhooks/{webhook_id}").json()["data"]
    assert shown["status"] == "DISABLED"
    assert shown["disabledReason"] == "GONE"
    assert shown["disabledAt"] is not None
    # One attempt, no retries: a 410 is final.
    deliveries = api.get(f"/v1/webhooks/{webhook_id}/deliveries").json()["data"]
    assert [(d["status"], d["attempts"], d["responseStatus"]) for d in deliveries] == [
        ("FAILED", 1, 410)
    ]

    # Nothing more is sent to it...
    committed_event(actor)
    time.sleep(2)
    assert len(receiver.at("/gone")) == 1
    assert Delivery.objects.filter(endpoint_id=webhook_id).count() == 1

    # ...until it is re-enabled.
    enabled = api.post(f"/v1/webhooks/{webhook_id}/enable")
    assert enabled.status_code == 200
    assert enabled.json()["data"]["status"] == "ACTIVE"
    assert enabled.json()["data"]["disabledReason"] is None
    committed_event(actor)
    assert len(receiver.wait_for("/gone", 2)) == 2


def test_an_endpoint_failing_for_days_is_disabled_one_failing_for_less_is_not(
    celery_worker: Any, receiver: Receiver
) -> None:
    """The streak starts at the first failed attempt after a success. Five days of failures
    are stood in for by the streak's start, set six days back (and one hour back for the
    endpoint that must stay)."""
    actor = make_actor("failing")
    receiver.default = Answer(500)
    # Every answer a success: besides the file's event, /recovered also gets the
    # webhook_endpoint.disabled event when /days is disabled (to the tenant's other endpoints),
    # and a 500 for that one would start a new failure streak.
    receiver.script("/recovered", *[Answer(200)] * 10)
    days = Endpoint.objects.create(
        **actor.tenant.owner(), url=receiver.url("/days"), secret="whsec_d"
    )
    hour = Endpoint.objects.create(
        **actor.tenant.owner(), url=receiver.url("/hour"), secret="whsec_h"
    )
    recovered = Endpoint.objects.create(
        **actor.tenant.owner(), url=receiver.url("/recovered"), secret="whsec_r"
    )
    Endpoint.objects.filter(id__in=[days.id, recovered.id]).update(
        failing_since=timezone.now() - timedelta(days=6)
    )
    Endpoint.objects.filter(id=hour.id).update(failing_since=timezone.now() - timedelta(hours=1))

    committed_event(actor)
    receiver.wait_for("/days", 1)
    receiver.wait_for("/hour", 1)
    receiver.wait_for("/recovered", 1)
    wait_until(lambda: Endpoint.objects.get(id=days.id).status == "DISABLED")

    days.refresh_from_db()
    hour.refresh_from_db()
    recovered.refresh_from_db()
    assert days.disabled_reason == "FAILING"
    # Its delivery is FAILED at once: no more retries to an endpoint given up on.
    wait_until(
        lambda: (
            set(Delivery.objects.filter(endpoint=days).values_list("status", flat=True))
            == {"FAILED"}
        )
    )
    assert hour.status == "ACTIVE" and hour.failing_since is not None
    assert recovered.status == "ACTIVE" and recovered.failing_since is None
