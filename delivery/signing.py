"""The delivery URL's form and its signature: pure functions, no database.

A delivery URL is ``{base}/d/{keyId}/{fileId}/{options}/{signature}``:

- ``options`` is ``-`` when there are none, else comma-separated ``name=value`` pairs in
  this order, each only when given: ``width``, ``height``, ``fit``, ``format``, ``quality``
  (the transform), ``version`` (a pinned version), ``expires`` (Unix seconds; absent: the
  URL never expires).
- ``signature`` is the unpadded base64url of HMAC-SHA256, keyed with the ``dsec_…`` secret
  (its UTF-8 bytes, prefix included), over ``{keyId}/{fileId}/{options}``.

The signature covers everything that changes the answer, so no part of the path can be
changed without the secret. docs/guide.md states the same, with test vectors.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

# The options in their one order (signers emit them so; the resolver refuses any other).
OPTION_ORDER = ("width", "height", "fit", "format", "quality", "version", "expires")
NO_OPTIONS = "-"


class Malformed(ValueError):
    """A path that is not a delivery URL's (answered as a bad signature: nothing in it can
    be trusted)."""


@dataclass(frozen=True)
class Options:
    width: int | None = None
    height: int | None = None
    fit: str | None = None
    format: str | None = None
    quality: int | None = None
    version: int | None = None
    expires: int | None = None

    @property
    def has_transform(self) -> bool:
        return any(
            value is not None
            for value in (self.width, self.height, self.fit, self.format, self.quality)
        )


def format_options(options: Options) -> str:
    pairs = [
        f"{name}={value}" for name in OPTION_ORDER if (value := getattr(options, name)) is not None
    ]
    return ",".join(pairs) or NO_OPTIONS


_INTEGERS = frozenset({"width", "height", "quality", "version", "expires"})


def parse_options(text: str) -> Options:
    """The options of a path segment, exactly as format_options writes them (any other
    spelling of the same options is refused, so one URL has one spelling)."""
    if text == NO_OPTIONS:
        return Options()
    values: dict[str, int | str] = {}
    for pair in text.split(","):
        name, sep, value = pair.partition("=")
        if not sep or name not in OPTION_ORDER or name in values or not value:
            raise Malformed(f"bad option {pair!r}")
        if name in _INTEGERS:
            if not (value.isascii() and value.isdigit()) or value != str(int(value)):
                raise Malformed(f"bad number in {pair!r}")
            values[name] = int(value)
        else:
            values[name] = value
    options = Options(**values)  # type: ignore[arg-type]
    if format_options(options) != text:
        raise Malformed("options out of order")
    return options


def signature(secret: str, key_id: str, file_id: str, options: str) -> str:
    digest = hmac.new(
        secret.encode(), f"{key_id}/{file_id}/{options}".encode(), hashlib.sha256
    ).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def signature_matches(secret: str, key_id: str, file_id: str, options: str, given: str) -> bool:
    # As bytes: compare_digest refuses str holding anything but ASCII, and a URL's path may
    # hold any character.
    expected = signature(secret, key_id, file_id, options).encode()
    return hmac.compare_digest(expected, given.encode())


def delivery_path(secret: str, key_id: str, file_id: str, options: Options) -> str:
    """The URL's path (``/d/…``); the caller puts the base in front."""
    text = format_options(options)
    return f"/d/{key_id}/{file_id}/{text}/{signature(secret, key_id, file_id, text)}"
