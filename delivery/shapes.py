"""What the delivery endpoints answer (see storage_service/openapi/)."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from storage_service.openapi import JsonSchema, id_schema
from storage_service.shapes import Timestamp, Url

DeliveryKeyId = Annotated[str, id_schema("dk")]


class DeliveryKeyJson(TypedDict):
    """A delivery key, as every read shows it: never its secret. ``revokedAt`` is null while
    it signs; URLs signed with a revoked key no longer resolve."""

    id: DeliveryKeyId
    createdAt: Timestamp
    revokedAt: Timestamp | None


class DeliveryKeyCreatedJson(TypedDict):
    """The new key and its secret, shown this once: sign delivery URLs with both (the
    guide's "Delivery URLs" section)."""

    deliveryKey: DeliveryKeyJson
    secret: Annotated[str, JsonSchema(pattern="^dsec_[A-Za-z0-9_-]{43}$")]


class DeliveryKeyRevokedJson(TypedDict):
    id: DeliveryKeyId
    revoked: Literal[True]


class DeliveryUrlJson(TypedDict):
    """A signed delivery URL (``/d/…``), valid until ``expiresAt`` (null: it never
    expires), or until its key is revoked."""

    url: Url
    expiresAt: Timestamp | None
