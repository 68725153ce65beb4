"""The signature header during a rotation's overlap: Stripe's form, which Stripe's SDK and
our Python client verify under either secret."""

from __future__ import annotations

import time

import pytest
import stripe
from storage_client.webhooks import SignatureError, verify

from webhooks.signing import new_secret, signature, signature_header

BODY = b'{"id":"evt_1","type":"file.uploaded","created_at":"2026-11-25T10:00:00.000Z","data":{}}'


def test_one_v1_per_signing_secret_the_new_one_first() -> None:
    new, old = new_secret(), new_secret()
    now = int(time.time())

    header = signature_header(new, now, BODY, old)

    assert header == f"t={now},v1={signature(new, now, BODY)},v1={signature(old, now, BODY)}"
    assert signature_header(new, now, BODY) == f"t={now},v1={signature(new, now, BODY)}"


def test_stripe_and_our_client_accept_either_secret_of_an_overlap() -> None:
    new, old, stranger = new_secret(), new_secret(), new_secret()
    header = signature_header(new, int(time.time()), BODY, old)

    for secret in (new, old):
        stripe.WebhookSignature.verify_header(BODY.decode(), header, secret, tolerance=300)
        assert stripe.Webhook.construct_event(BODY.decode(), header, secret)["id"] == "evt_1"
        assert verify(BODY, header, secret)["id"] == "evt_1"
    assert verify(BODY, header, [stranger, old])["id"] == "evt_1"
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(BODY.decode(), header, stranger, tolerance=300)
    with pytest.raises(SignatureError):
        verify(BODY, header, [stranger])


def test_after_the_overlap_only_the_new_secret_verifies() -> None:
    new, old = new_secret(), new_secret()
    header = signature_header(new, int(time.time()), BODY)

    stripe.WebhookSignature.verify_header(BODY.decode(), header, new, tolerance=300)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(BODY.decode(), header, old, tolerance=300)
    with pytest.raises(SignatureError):
        verify(BODY, header, old)
    assert verify(BODY, header, [old, new])["type"] == "file.uploaded"


@pytest.mark.parametrize("secrets", [[], [""], [None]])
def test_verify_refuses_no_secret(secrets: list) -> None:
    header = signature_header(new_secret(), int(time.time()), BODY)
    with pytest.raises(ValueError):
        verify(BODY, header, secrets)
