"""What the client's resources share: their base class, and the request pieces the two
ways of starting an upload (single and multipart) both send."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage_client.client import Client


class Resource:
    """A group of the API's routes, sharing the client's connections and settings."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._api = client._api


def declared_upload(
    filename: str,
    content_type: str,
    size: int,
    path: str | None,
    metadata: dict[str, Any] | None,
    expires_at: datetime | str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"filename": filename, "contentType": content_type, "size": size}
    if path is not None:
        body["path"] = path
    if metadata is not None:
        body["metadata"] = metadata
    if expires_at is not None:
        body["expiresAt"] = timestamp(expires_at)
    return body


def timestamp(value: datetime | str) -> str:
    """An expiry as the API takes it: ISO 8601 UTC. A naive datetime is refused rather than
    guessed at (local time or UTC?)."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("expires_at must be an aware datetime (e.g. with tzinfo=timezone.utc)")
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def idempotency_header(idempotency_key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": idempotency_key} if idempotency_key else {}
