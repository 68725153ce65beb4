"""What ``GET /v1/me`` answers (see storage_service/openapi/)."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from accounts.scopes import ScopeName
from storage_service.openapi import JsonSchema, id_schema
from storage_service.shapes import Timestamp

Environment = Literal["test", "live"]


class MeProjectJson(TypedDict):
    id: Annotated[str, id_schema("proj")]
    name: str
    createdAt: Timestamp


class MeOrganizationJson(TypedDict):
    id: Annotated[str, id_schema("org")]
    name: str


class MeApiKeyJson(TypedDict):
    """The key itself is never shown again; ``prefix`` is its first 16 characters (``sk_``
    for a full key, ``rk_`` for a restricted one). ``scopes``: what the key may do (every
    scope for a full key)."""

    id: Annotated[str, id_schema("key")]
    prefix: Annotated[str, JsonSchema(example="sk_test_kvoKWrGu")]
    environment: Environment
    scopes: list[ScopeName]
    createdAt: Timestamp


class MeJson(TypedDict):
    """The project, organization and key a request authenticates as. Test and live data are
    separate: a test key sees only test data."""

    project: MeProjectJson
    organization: MeOrganizationJson
    apiKey: MeApiKeyJson
    environment: Environment


class UsageStorageJson(TypedDict):
    """What the store holds for this mode: every version of every file, the trash until it
    is purged, and variants (a copy shares its source's bytes and counts once). ``files``
    counts uploaded files that are not deleted."""

    bytes: Annotated[int, JsonSchema(minimum=0)]
    files: Annotated[int, JsonSchema(minimum=0)]


class UsageBandwidthJson(TypedDict):
    """Bytes of download URLs issued this UTC month (files and variants)."""

    month: Annotated[str, JsonSchema(pattern=r"^\d{4}-\d{2}$", example="2026-11")]
    bytes: Annotated[int, JsonSchema(minimum=0)]


class UsageLimitsJson(TypedDict):
    """This mode's limits, each null when unset."""

    maxStorageBytes: Annotated[int | None, JsonSchema(minimum=0)]
    maxFileSizeBytes: Annotated[int | None, JsonSchema(minimum=0)]
    allowedContentTypes: Annotated[
        list[str] | None,
        JsonSchema(description="MIME types, exact or `type/*`; null: any type."),
    ]


class UsageJson(TypedDict):
    storage: UsageStorageJson
    bandwidth: UsageBandwidthJson
    limits: UsageLimitsJson
