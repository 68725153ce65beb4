"""Sample images for the variant tests: real encodings made with Pillow, plus crafted bad ones."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image

RED = (220, 20, 20)
GREEN = (20, 200, 20)
BLUE = (20, 20, 220)


def encode(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def halves(size: tuple[int, int] = (40, 20)) -> Image.Image:
    """Left half red, right half blue: shows where a rotation or crop went."""
    image = Image.new("RGB", size, RED)
    image.paste(BLUE, (size[0] // 2, 0, size[0], size[1]))
    return image


def stripes(size: tuple[int, int] = (300, 100)) -> Image.Image:
    """Three vertical stripes, red, green, blue: a centred crop keeps the green one."""
    image = Image.new("RGB", size, RED)
    third = size[0] // 3
    image.paste(GREEN, (third, 0, 2 * third, size[1]))
    image.paste(BLUE, (2 * third, 0, size[0], size[1]))
    return image


def jpeg_with_orientation(orientation: int, size: tuple[int, int] = (40, 20)) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return encode(halves(size), "JPEG", quality=95, exif=exif)


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload))
        + kind
        + payload
        + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)
    )


def png_bomb(width: int = 60000, height: int = 60000) -> bytes:
    """A tiny PNG whose header claims width x height pixels (a decompression bomb's shape)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 1024)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", idat)
        + _chunk(b"IEND", b"")
    )


def corrupt_png() -> bytes:
    """A PNG signature and header followed by garbage where the pixels should be."""
    good = encode(stripes((64, 64)), "PNG")
    return good[:40] + b"\x13\x37" * 200


def truncated_jpeg() -> bytes:
    data = encode(stripes((400, 300)), "JPEG", quality=90)
    return data[: len(data) // 2]


def animated_gif() -> bytes:
    frames = [Image.new("RGB", (30, 30), color) for color in (RED, GREEN, BLUE)]
    return encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)


def animated_webp() -> bytes:
    frames = [Image.new("RGB", (30, 30), color) for color in (GREEN, RED, BLUE)]
    return encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], duration=50)


SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
    b'<rect width="10" height="10"/></svg>'
)


def close(pixel: object, colour: tuple[int, int, int], tolerance: int = 40) -> bool:
    assert isinstance(pixel, tuple)
    return all(abs(int(a) - b) <= tolerance for a, b in zip(pixel[:3], colour, strict=True))


def alpha(image: Image.Image, xy: tuple[int, int]) -> int:
    pixel = image.getpixel(xy)
    assert isinstance(pixel, tuple)
    return int(pixel[3])
