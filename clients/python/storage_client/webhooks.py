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
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from storage_client.errors import StorageError
from storage_client.models import Delivery, Event, Webhook

if TYPE_CHECKING:
    from storage_client._http import Api

SIGNATURE_HEADER = "SERVICE-Signature"
DEFAULT_TOLERANCE = 300


class SignatureError(StorageError):
    """The request is not a valid, fresh delivery signed with this secret."""


def verify(
    payload: bytes | str,
    signature_header: str,
    secret: str | Sequence[str],
    *,
    tolerance: int = DEFAULT_TOLERANCE,
) -> dict[str, Any]:
    """Check a delivery's ``SERVICE-Signature`` and return its event (the parsed body).

    ``payload`` must be the raw request body, exactly as received (before any JSON
    parsing). The header is ``t=<unix seconds>,v1=<hex HMAC-SHA256>``; the signature is
    over ``<t>.<payload>`` under the endpoint's secret, compared in constant time. During a
    secret rotation's overlap the header carries a ``v1`` per secret, and ``secret`` may be
    several secrets (the new and the old): any ``v1`` matching any of them is accepted. A
    timestamp more than ``tolerance`` seconds from this machine's clock is refused: a
    replay. Raises ``SignatureError`` on any mismatch.
    """
    body = payload.encode() if isinstance(payload, str) else bytes(payload)
    timestamp, signatures = _parse(signature_header)
    if tolerance > 0 and abs(time.time() - timestamp) > tolerance:
        raise SignatureError(
            f"the signature's timestamp is more than {tolerance} s from now (a replay?)",
            code="SIGNATURE_EXPIRED",
        )
    signed = str(timestamp).encode() + b"." + body
    keys = [secret] if isinstance(secret, str) else list(secret)
    if not keys or not all(isinstance(key, str) and key for key in keys):
        raise ValueError("secret must be a secret (whsec_…) or a list of them")
    expected = [hmac.new(key.encode(), signed, hashlib.sha256).hexdigest() for key in keys]
    matches = [
        hmac.compare_digest(wanted, candidate) for wanted in expected for candidate in signatures
    ]
    if not any(matches):
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

    def replay(
        self,
        webhook_id: str,
        *,
        since: datetime | str,
        until: datetime | str | None = None,
    ) -> int:
        """Send the endpoint every retained event of ``[since, until)`` again (``until``
        defaults to now), as new deliveries, whether or not they were delivered before;
        returns how many deliveries that makes."""
        body: dict[str, Any] = {"since": _timestamp(since)}
        if until is not None:
            body["until"] = _timestamp(until)
        data = self._api.request("POST", f"/webhooks/{webhook_id}/replay", json=body)["data"]
        return int(data["deliveries"])

    def rotate_secret(
        self, webhook_id: str, *, overlap_seconds: int | None = None
    ) -> tuple[Webhook, str]:
        """Give the endpoint a new signing secret; returns it with the endpoint (the secret
        is never shown again). For ``overlap_seconds`` (the service's default: a day) the
        replaced secret signs every delivery too: verify with both meanwhile."""
        body: dict[str, Any] = {}
        if overlap_seconds is not None:
            body["overlapSeconds"] = overlap_seconds
        data = self._api.request("POST", f"/webhooks/{webhook_id}/rotate-secret", json=body)["data"]
        return Webhook.from_json(data["webhook"]), str(data["secret"])


class Events:
    """The events of the key's mode, as their webhook deliveries carry them, for the
    service's retention window."""

    def __init__(self, api: Api) -> None:
        self._api = api

    def list(self, *, type: str | None = None, page_size: int | None = None) -> Iterator[Event]:
        """Every event (of ``type``, if given), newest first, page after page."""
        for item in self._api.pages("/events", {"type": type, "limit": page_size}):
            yield Event.from_json(item)

    def get(self, event_id: str) -> Event:
        return Event.from_json(self._api.request("GET", f"/events/{event_id}")["data"])


def _timestamp(value: datetime | str) -> str:
    """A timestamp as the API takes it: an aware datetime in UTC with milliseconds, or a
    string passed as it is (a naive datetime is taken to be UTC)."""
    if isinstance(value, str):
        return value
    moment = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    text = moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
