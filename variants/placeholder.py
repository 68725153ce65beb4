"""Placeholders: a ThumbHash of an image's thumbnail (github.com/evanw/thumbhash), about 25
bytes that a page decodes into a blurred preview to paint before the image loads. Pure: no
Django, no store."""

from __future__ import annotations

import base64
import io

import thash
from PIL import Image


def placeholder_of(data: bytes) -> str:
    """The ThumbHash of an encoded image, base64 (RFC 4648, padded). ThumbHash takes at
    most 100x100 pixels; thash scales the image down to that first (the thumbnail is small,
    so this costs a few milliseconds), keeping the alpha channel."""
    with Image.open(io.BytesIO(data)) as image:
        rgba = image.convert("RGBA")
    return base64.b64encode(bytes(thash.encode(rgba))).decode()
