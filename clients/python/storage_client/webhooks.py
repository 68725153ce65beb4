"""Webhooks: verifying a delivery's signature (``verify``), and managing endpoints.

A receiver needs only ``verify``::

    from storage_client.webhooks import verify, SignatureError

    try:
        event = verify(raw_body, headers["SERVICE-Signature"], secret)
    except SignatureError:
        return 400
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from storage_client.errors import StorageError
from storage_client.models import Delivery, Webhook

if TYPE_CHECKING:
    from storage_client._http import Api

SIGNATURE_HEADER = "SERVICE-Signature"
DEFAULT_TOLERANCE = 300


class SignatureError(StorageError):
    """The request is not a valid, fresh delivery signed with this secret."""


def verify(
    payload: bytes | str,
    signature_header: str,
    secret: str,
    *,
    tolerance: int = DEFAULT_TOLERANCE,
) -> dict[str, Any]:
    """Check a delivery's ``SERVICE-Signature`` and return its event (the parsed body).

    ``payload`` must be the raw request body, exactly as received (before any JSON
    parsing). The header is ``t=<unix seconds>,v1=<hex HMAC-SHA256>``; the signature is
    over ``<t>.<payload>`` under the endpoint's secret, compared in constant time (any of
    several ``v1`` values may match, as during a secret rotation). A timestamp more than
    ``tolerance`` seconds from this machine's clock is refused: a replay. Raises
    ``SignatureError`` on any mismatch.
    """
    body = payload.encode() if isinstance(payload, str) else bytes(payload)
    timestamp, signatures = _parse(signature_header)
    if tolerance > 0 and abs(time.time() - timestamp) > tolerance:
        raise SignatureError(
            f"the signature's timestamp is more than {tolerance} s from now (a replay?)",
            code="SIGNATURE_EXPIRED",
        )
    signed = str(timestamp).encode() + b"." + body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, candidate) for candidate in signatures):
        raise SignatureError(
            "no signature matches this payload and secret", code="SIGNATURE_MISMATCH"
        )
    try:
        event = json.loads(body)
    except ValueError as exc:
        raise SignatureError("the payload is not JSON", code="INVALID_PAYLOAD") from exc
    if not isinstance(event, dict):
        raise SignatureError("the payload is not an event object", code="INVALID_PAYLOAD")
    return event


def _parse(header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    signatures: list[str] = []
    for item in (header or "").split(","):
        key, _, value = item.strip().partition("=")
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                timestamp = None
        elif key == "v1" and value:
            signatures.append(value.strip().lower())
    if timestamp is None or not signatures:
        raise SignatureError(
            f"malformed {SIGNATURE_HEADER} header (expected t=<seconds>,v1=<hex>)",
            code="SIGNATURE_MALFORMED",
        )
    return timestamp, signatures


class Webhooks:
    """The project's webhook endpoints and their delivery logs."""

    def __init__(self, api: Api) -> None:
        self._api = api

    def create(self, url: str, *, events: builtins.list[str] | None = None) -> tuple[Webhook, str]:
        """Register an endpoint; returns it and its signing secret (``whsec_…``), which the
        service never shows again. Without ``events``, every event type is sent."""
        body: dict[str, Any] = {"url": url}
        if events is not None:
            body["events"] = list(events)
        data = self._api.request("POST", "/webhooks", json=body)["data"]
        return Webhook.from_json(data["webhook"]), str(data["secret"])

    def list(self) -> builtins.list[Webhook]:
        return [Webhook.from_json(item) for item in self._api.pages("/webhooks")]

    def get(self, webhook_id: str) -> Webhook:
        return Webhook.from_json(self._api.request("GET", f"/webhooks/{webhook_id}")["data"])

    def delete(self, webhook_id: str) -> None:
        self._api.request("DELETE", f"/webhooks/{webhook_id}")

    def deliveries(self, webhook_id: str, *, page_size: int | None = None) -> Iterator[Delivery]:
        """The endpoint's deliveries, newest first, every page."""
        for item in self._api.pages(f"/webhooks/{webhook_id}/deliveries", {"limit": page_size}):
            yield Delivery.from_json(item)

    def redeliver(self, webhook_id: str, delivery_id: str) -> Delivery:
        """Send a FAILED or PENDING delivery again now."""
        data = self._api.request(
            "POST", f"/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver"
        )["data"]
        return Delivery.from_json(data)
