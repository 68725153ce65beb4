"""Upload tokens: a server mints one for a page, which then uploads with it alone.

::

    token, raw = client.upload_tokens.create(
        path="avatars/user-42", max_file_size_bytes=5_000_000,
        allowed_content_types=["image/*"], allowed_origins=["https://app.example"],
    )
    # hand ``raw`` (ut_…) to the page; it is never shown again
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from storage_client.models import _optional_int, _optional_str, _optional_time, _time

if TYPE_CHECKING:
    from storage_client._http import Api


@dataclass(frozen=True)
class UploadToken:
    """An upload token (``utk_…``): its bounds and how many files it has started."""

    id: str
    path: str | None
    max_file_size_bytes: int | None
    allowed_content_types: list[str] | None
    max_files: int
    files_started: int
    allowed_origins: list[str] | None
    metadata: dict[str, Any] | None
    expires_at: datetime
    created_at: datetime
    revoked_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UploadToken:
        types = data.get("allowedContentTypes")
        origins = data.get("allowedOrigins")
        return cls(
            id=str(data["id"]),
            path=_optional_str(data, "path"),
            max_file_size_bytes=_optional_int(data, "maxFileSizeBytes"),
            allowed_content_types=None if types is None else [str(t) for t in types],
            max_files=int(data["maxFiles"]),
            files_started=int(data["filesStarted"]),
            allowed_origins=None if origins is None else [str(o) for o in origins],
            metadata=data.get("metadata"),
            expires_at=_time(data, "expiresAt"),
            created_at=_time(data, "createdAt"),
            revoked_at=_optional_time(data, "revokedAt"),
            raw=dict(data),
        )


class UploadTokens:
    """Minting, listing, reading and revoking upload tokens (``ut_…``)."""

    def __init__(self, api: Api) -> None:
        self._api = api

    def create(
        self,
        *,
        path: str | None = None,
        max_file_size_bytes: int | None = None,
        allowed_content_types: Sequence[str] | None = None,
        max_files: int | None = None,
        expires_in_seconds: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        allowed_origins: Sequence[str] | None = None,
    ) -> tuple[UploadToken, str]:
        """Mint a token; returns it and the token itself (``ut_…``), shown only this once.
        Unset bounds take the service's defaults (one file, 15 minutes, anywhere, any type,
        any origin)."""
        body: dict[str, Any] = {}
        for name, value in (
            ("path", path),
            ("maxFileSizeBytes", max_file_size_bytes),
            (
                "allowedContentTypes",
                None if allowed_content_types is None else [*allowed_content_types],
            ),
            ("maxFiles", max_files),
            ("expiresInSeconds", expires_in_seconds),
            ("metadata", None if metadata is None else dict(metadata)),
            ("allowedOrigins", None if allowed_origins is None else [*allowed_origins]),
        ):
            if value is not None:
                body[name] = value
        data = self._api.request("POST", "/upload-tokens", json=body)["data"]
        return UploadToken.from_json(data["uploadToken"]), str(data["token"])

    def list(self, *, page_size: int | None = None) -> Iterator[UploadToken]:
        """The project's tokens, newest first, every page (never the tokens themselves)."""
        for item in self._api.pages("/upload-tokens", {"limit": page_size}):
            yield UploadToken.from_json(item)

    def get(self, token_id: str) -> UploadToken:
        return UploadToken.from_json(self._api.request("GET", f"/upload-tokens/{token_id}")["data"])

    def revoke(self, token_id: str) -> None:
        """The token stops working at once; revoking twice succeeds."""
        self._api.request("DELETE", f"/upload-tokens/{token_id}")


__all__: builtins.list[str] = ["UploadToken", "UploadTokens"]
