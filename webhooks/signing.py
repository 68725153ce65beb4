"""The ``SERVICE-Signature`` header: ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">``,
with one ``v1=`` per secret that signs (two during a rotation's overlap: the new secret's
first). Stripe's header form, which Stripe's own verifiers accept: any ``v1`` may match."""

from __future__ import annotations

import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    # 32 random bytes: as strong as the HMAC-SHA256 key can use.
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes, *older: str) -> str:
    signatures = "".join(f",v1={signature(key, timestamp, body)}" for key in (secret, *older))
    return f"t={timestamp}{signatures}"
