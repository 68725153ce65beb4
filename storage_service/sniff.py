"""Sniffing a stored object's real type from its first bytes, and judging a declared type.

Sniffing with puremagic (pure Python, maintained signature database). A declared type is
refused only when it *clearly* contradicts the bytes: generic declarations, bytes that
sniffing cannot identify, and containers shared by many formats (ZIP, XML, text) are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

import puremagic

# How many leading bytes are read from the store to sniff (the signatures live up front).
SNIFF_BYTES = 8192

GENERIC_TYPES = {"application/octet-stream", "binary/octet-stream", "application/unknown"}

_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
    "image/x-ms-bmp": "image/bmp",
    "image/x-icon": "image/vnd.microsoft.icon",
    "image/heic-sequence": "image/heic",
    "application/x-pdf": "application/pdf",
    "application/x-zip-compressed": "application/zip",
    "application/x-zip": "application/zip",
    "application/x-gzip": "application/gzip",
    "audio/mp3": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "text/xml": "application/xml",
}

_ZIP_FAMILY_PREFIXES = (
    "application/zip",
    "application/vnd.openxmlformats-officedocument",
    "application/vnd.oasis.opendocument",
    "application/vnd.ms-",
    "application/epub+zip",
    "application/java-archive",
    "application/vnd.android.package-archive",
)

_TEXT_LIKE = ("text/", "application/json", "application/xml", "application/javascript")


@dataclass(frozen=True)
class Sniffed:
    candidates: frozenset[str]  # every type the bytes match at the best confidence
    best: str | None


def normalize(mime: str) -> str:
    base = mime.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def sniff(head: bytes) -> Sniffed:
    if not head:
        return Sniffed(frozenset(), None)
    try:
        matches = puremagic.magic_string(head)
    except (puremagic.PureError, ValueError):
        return Sniffed(frozenset(), None)
    matches = [m for m in matches if m.mime_type]
    if not matches:
        return Sniffed(frozenset(), None)
    top = max(m.confidence for m in matches)
    candidates = frozenset(normalize(m.mime_type) for m in matches if m.confidence >= top)
    best = normalize(matches[0].mime_type)
    return Sniffed(candidates, best)


def _is_text_like(mime: str) -> bool:
    return mime.startswith(_TEXT_LIKE) or mime.endswith(("+json", "+xml"))


def _is_zip_family(mime: str) -> bool:
    return mime.startswith(_ZIP_FAMILY_PREFIXES) or mime.endswith("+zip")


def contradicts(declared: str, sniffed: Sniffed) -> bool:
    """True only when the bytes are clearly something other than what was declared."""
    declared = normalize(declared)
    if declared in GENERIC_TYPES or not sniffed.candidates:
        return False
    if declared in sniffed.candidates:
        return False
    if _is_zip_family(declared) and any(_is_zip_family(c) for c in sniffed.candidates):
        return False
    family = declared.split("/", 1)[0]
    # Audio and video containers (MP4/MOV/M4A/3GP, Ogg, Matroska) share signatures.
    if family in {"audio", "video"} and any(
        c.split("/", 1)[0] in {"audio", "video"} for c in sniffed.candidates
    ):
        return False
    return not (_is_text_like(declared) and all(_is_text_like(c) for c in sniffed.candidates))


def recorded_type(declared: str, sniffed: Sniffed) -> str | None:
    """The type to record as the file's real type: the declared one when the bytes agree."""
    declared = normalize(declared)
    if declared in sniffed.candidates:
        return declared
    return sniffed.best
