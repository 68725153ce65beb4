"""Delivery key secrets: ``dsec_`` and 43 base64url characters, derived, never stored.

secret = ``dsec_`` + base64url(HMAC-SHA256(server key, ``{keyId}:{salt}``)), where the server
key is itself derived from ``SERVICE_API_KEY_HASH_SECRET`` (so no new secret to manage;
changing it invalidates every API key and every delivery key alike) and ``salt`` is 256
random bits stored with the key. A leaked database alone gives no secret; the resolver
recomputes the secret to check a URL's HMAC, which a one-way hash could not allow.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from functools import lru_cache

from django.conf import settings

PREFIX = "dsec_"


def new_salt() -> str:
    return secrets.token_hex(32)


@lru_cache(maxsize=4)
def _server_key(hash_secret: str) -> bytes:
    # Domain-separated from the API keys' own use of the same setting. Worked out once per
    # setting's value: every resolution needs it.
    return hmac.new(hash_secret.encode(), b"delivery-key-secrets", hashlib.sha256).digest()


def secret_of(*, key_id: str, salt: str) -> str:
    server_key = _server_key(settings.SERVICE_API_KEY_HASH_SECRET)
    digest = hmac.new(server_key, f"{key_id}:{salt}".encode(), hashlib.sha256).digest()
    return PREFIX + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
