"""PNG decoding with Wuffs (pywuffs): about twice as fast as libspng, and memory-safe.

Wuffs is written in a language that proves its decoders free of buffer overflows, which suits
bytes uploaded by strangers, and its PNG decoder (SIMD row filters, its own fast inflate) is
the fastest there is. It decodes every PNG kind (palette, grey, 16-bit, interlaced,
transparency) to 8-bit RGBA, which a Pillow image then uses without a copy.

pywuffs returns numpy arrays, so importing it brings numpy (about 18 MB resident); it is
imported at the first PNG, not with this module, so a process that never decodes a PNG (the
API servers import the pipeline too) does not pay for it. Any failure returns None and the
caller falls back (libspng, then Pillow, which also reports what is wrong with the bytes).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from PIL import Image

logger = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _decoder() -> Any | None:
    try:
        from pywuffs import ImageDecoderType, PixelFormat, aux  # type: ignore[import-not-found]
    except ImportError:
        logger.warning("pywuffs is not installed; PNGs are decoded by libspng or Pillow")
        return None
    config = aux.ImageDecoderConfig()
    config.enabled_decoders = [ImageDecoderType.PNG]
    config.pixel_format = PixelFormat.RGBA_NONPREMUL
    return aux.ImageDecoder(config)


def decode_rgba(data: bytes, size: tuple[int, int], *, opaque: bool) -> Image.Image | None:
    """The PNG as a Pillow image (RGBX when ``opaque``, else RGBA) sharing Wuffs' buffer, or
    None. ``size`` is the one Pillow read from the header and the pixel cap was checked
    against; an image Wuffs sees otherwise is refused."""
    decoder = _decoder()
    if decoder is None:
        return None
    try:
        result = decoder.decode(data)
    except Exception:
        return None
    pixels = result.pixbuf
    if result.error_message or getattr(pixels, "shape", None) != (size[1], size[0], 4):
        return None
    mode = "RGBX" if opaque else "RGBA"
    return Image.frombuffer(mode, size, pixels, "raw", mode, 0, 1)
