"""API key format and hashing: ``sk_<env>_<43 chars of base64url>`` (256 random bits), and
``rk_<env>_…`` for a restricted key (accounts/scopes.py)."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from django.conf import settings

_KEY_SHAPE = re.compile(r"^[sr]k_(test|live)_[A-Za-z0-9_-]{43}$")
PREFIX_LENGTH = 16


def generate_key(environment: str, *, restricted: bool = False) -> str:
    kind = "rk" if restricted else "sk"
    return f"{kind}_{environment}_{secrets.token_urlsafe(32)}"


def is_well_formed(raw_key: str) -> bool:
    return bool(_KEY_SHAPE.match(raw_key))


def hash_key(raw_key: str) -> str:
    secret = settings.SERVICE_API_KEY_HASH_SECRET.encode()
    return hmac.new(secret, raw_key.encode(), hashlib.sha256).hexdigest()


def display_prefix(raw_key: str) -> str:
    return raw_key[:PREFIX_LENGTH]
