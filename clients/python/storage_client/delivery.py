"""Delivery URLs signed offline, as the service's guide ("Delivery URLs") specifies them:
``{base}/d/{keyId}/{fileId}/{options}/{signature}``, the signature an HMAC-SHA256 keyed with
the ``dsec_…`` secret over ``{keyId}/{fileId}/{options}``, base64url without padding."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

from storage_client.errors import ConfigurationError

DELIVERY_KEY_ENV = "STORAGE_DELIVERY_KEY"
# The options, in the one order the service accepts.
OPTION_ORDER = ("width", "height", "fit", "format", "quality", "version", "expires")


class DeliveryKey:
    """A delivery key and its secret, given as ``dk_…:dsec_…``."""

    def __init__(self, pair: str) -> None:
        key_id, sep, secret = pair.strip().partition(":")
        if not sep or not key_id.startswith("dk_") or not secret.startswith("dsec_"):
            raise ConfigurationError("a delivery key is given as dk_…:dsec_…")
        self.id = key_id
        self._secret = secret

    def __repr__(self) -> str:
        return f"DeliveryKey({self.id!r})"  # never the secret

    def sign(self, file_id: str, options: str) -> str:
        digest = hmac.new(
            self._secret.encode(), f"{self.id}/{file_id}/{options}".encode(), hashlib.sha256
        ).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def path(self, file_id: str, **options: int | str | None) -> str:
        """The URL's path (``/d/…``) for the options given (``None``: not given)."""
        text = format_options(**options)
        return f"/d/{self.id}/{file_id}/{text}/{self.sign(file_id, text)}"


def format_options(**options: int | str | None) -> str:
    unknown = set(options) - set(OPTION_ORDER)
    if unknown:
        raise TypeError(f"unknown delivery URL options: {sorted(unknown)}")
    pairs = [f"{name}={options[name]}" for name in OPTION_ORDER if options.get(name) is not None]
    return ",".join(pairs) or "-"


def expiry(expires_in_seconds: int | None, now: float | None = None) -> int | None:
    """The Unix second a URL valid for ``expires_in_seconds`` expires (None: never)."""
    if expires_in_seconds is None:
        return None
    return int(now if now is not None else time.time()) + int(expires_in_seconds)
