"""Upload grants: what an upload token (``ut_…``) lets its bearer do.

An upload token is a second kind of credential beside API keys: a browser holds it, and it
may only start uploads inside its bounds and work on the uploads it started. The token rows
live in uploads (uploads/tokens.py), above the apps whose routes a token calls (files), so
authentication hands those routes an ``UploadGrant``: the token's bounds, read once, and
``claim``, which counts one started file in the caller's transaction. files checks the bounds
(files/grants.py) without importing uploads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from accounts.tenancy import Tenant


@dataclass(frozen=True, slots=True)
class UploadGrant:
    token_id: str  # utk_…
    tenant: Tenant
    path: str | None  # the folder files go in or below; None: the root, so anywhere
    max_file_size_bytes: int | None
    allowed_content_types: list[str] | None
    metadata: dict[str, Any] | None
    # Counts one started file against ``maxFiles`` (403 UPLOAD_TOKEN_EXHAUSTED when none is
    # left); call it inside the transaction that creates the file, so a refused or failed
    # start counts nothing.
    claim: Callable[[], None] = field(compare=False, repr=False)

    # What the request log shows of a credential (storage_service/logs.py reads an API key's
    # project_id and prefix): the project, and the token's id in place of a key's prefix.
    @property
    def project_id(self) -> str:
        return self.tenant.project_id

    @property
    def prefix(self) -> str:
        return self.token_id
