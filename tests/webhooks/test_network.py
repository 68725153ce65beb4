"""Private addresses are refused (SSRF), at registration and at every delivery."""

from __future__ import annotations

import ipaddress
from unittest import mock

import pytest
from django.db import transaction
from django.test import override_settings

from events.services import event_record
from tests.factories import Actor
from tests.helpers import error_code
from tests.webhook_receiver import running_receiver
from webhooks import delivery, services
from webhooks.models import Delivery, Endpoint
from webhooks.network import HOST_REFUSED, Target, UrlRefused, address_allowed, parse_url

REFUSED_HOSTS = {
    "loopback v4": "127.0.0.1",
    "loopback v4, another": "127.8.9.10",
    "loopback v6": "[::1]",
    "private 10/8": "10.1.2.3",
    "private 172.16/12": "172.16.5.4",
    "private 172.31": "172.31.255.254",
    "private 192.168/16": "192.168.1.1",
    "private v6 (ULA)": "[fd12:3456::1]",
    "link-local v4": "169.254.1.1",
    "cloud metadata": "169.254.169.254",
    "link-local v6": "[fe80::1]",
    "multicast v4": "224.0.0.1",
    "multicast v4, admin": "239.255.255.250",
    "multicast v6": "[ff02::1]",
    "unspecified v4": "0.0.0.0",
    "unspecified v6": "[::]",
    "IPv4-mapped loopback": "[::ffff:127.0.0.1]",
    "IPv4-mapped private": "[::ffff:10.0.0.1]",
    "IPv4-mapped metadata": "[::ffff:169.254.169.254]",
    "shared address space": "100.64.0.1",
    "hostname resolving to loopback": "localhost",
}


@pytest.mark.parametrize("host", REFUSED_HOSTS.values(), ids=REFUSED_HOSTS.keys())
@override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=False)
def test_registration_refuses_private_addresses(owner: Actor, host: str) -> None:
    for url in (f"http://{host}/hook", f"https://{host}:8443/hook"):
        response = owner.post("/v1/webhooks", {"url": url})

        assert response.status_code == 400, (url, response.json())
        assert error_code(response) == "VALIDATION_ERROR"
        assert response.json()["error"]["details"]["url"] == [HOST_REFUSED]
    assert not Endpoint.objects.exists()


@override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=False)
def test_registration_accepts_a_public_address(owner: Actor) -> None:
    for url in ("https://93.184.215.14/hook", "http://[2606:4700:4700::1111]:8080/x?y=1"):
        assert owner.post("/v1/webhooks", {"url": url}).status_code == 201


@override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=False)
def test_registration_refuses_a_host_that_does_not_resolve(owner: Actor) -> None:
    response = owner.post("/v1/webhooks", {"url": "https://no-such-host.invalid/hook"})
    assert response.status_code == 400 and error_code(response) == "VALIDATION_ERROR"


@override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=True)
def test_with_private_networks_allowed_local_urls_register(owner: Actor) -> None:
    for url in ("http://127.0.0.1:9/hook", "http://localhost/hook", "http://[::1]/x"):
        assert owner.post("/v1/webhooks", {"url": url}).status_code == 201


@pytest.mark.parametrize(
    "text",
    ["1.1.1.1", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"],
)
def test_public_addresses_pass(text: str) -> None:
    assert address_allowed(ipaddress.ip_address(text))


def test_targets_keep_the_host_for_host_header_and_sni() -> None:
    assert parse_url("https://Hooks.Example.com/a?b=1") == Target(
        scheme="https", host="hooks.example.com", port=443, request_path="/a?b=1"
    )
    assert parse_url("http://[::1]:8080").host_header == "[::1]:8080"
    assert parse_url("http://example.com:80").host_header == "example.com"
    with pytest.raises(UrlRefused):
        parse_url("https://example.com/#frag")


@pytest.mark.django_db(transaction=True)
def test_every_delivery_checks_again(owner: Actor) -> None:
    """An endpoint registered while allowed (or whose DNS changed since) is refused when
    private networks are off at delivery time: a failed attempt, and nothing is sent."""
    with running_receiver() as receiver:
        with override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=True):
            for url in (receiver.url("/v4"), f"http://localhost:{receiver.port}/name"):
                assert owner.post("/v1/webhooks", {"url": url}).status_code == 201
        # No message to a worker: this test's own deliver() is the one attempt it checks.
        with mock.patch.object(services, "enqueue"), transaction.atomic():
            event = event_record(tenant=owner.tenant, type="file.created", data={})
        ids = list(Delivery.objects.filter(event=event).values_list("id", flat=True))

        with override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=False):
            retries = delivery.deliver(ids)

        assert receiver.received == []
        assert len(retries) == 1 and sorted(retries[0].ids) == sorted(ids)
        for row in Delivery.objects.filter(id__in=ids):
            assert row.status == "PENDING" and row.attempts == 1
            assert row.response_status is None
            assert row.last_error is not None and row.last_error.startswith("Refused:")
            assert HOST_REFUSED in row.last_error
