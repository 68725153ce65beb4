from __future__ import annotations

import pytest

from storage_service.sniff import contradicts, recorded_type, sniff
from tests.factories import image_bytes, jpeg_bytes, pdf_bytes, png_bytes

ZIP = b"PK\x03\x04" + b"\0" * 60


@pytest.mark.parametrize(
    ("declared", "data"),
    [
        ("image/png", png_bytes()),
        ("image/jpeg", jpeg_bytes()),
        ("image/jpg", jpeg_bytes()),  # an alias
        ("image/gif", image_bytes("GIF")),
        ("image/webp", image_bytes("WEBP")),
        ("application/pdf", pdf_bytes()),
        ("application/octet-stream", pdf_bytes()),  # generic: anything goes
        ("text/plain", b"just some words\n"),  # sniffing cannot tell: accepted
        ("text/csv", b"a,b\n1,2\n"),
        ("application/json", b'{"a": 1}'),
        ("text/plain", b'{"a": 1}'),  # text-like both ways
        ("application/zip", ZIP),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", ZIP),
        ("image/png; charset=binary", png_bytes()),
        ("image/png", b""),
    ],
)
def test_agreeing_or_undecidable_types_are_accepted(declared: str, data: bytes) -> None:
    assert not contradicts(declared, sniff(data))


@pytest.mark.parametrize(
    ("declared", "data"),
    [
        ("image/png", pdf_bytes()),
        ("image/png", jpeg_bytes()),
        ("image/jpeg", png_bytes()),
        ("application/pdf", png_bytes()),
        ("text/plain", png_bytes()),
        ("image/png", b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"></svg>'),
    ],
)
def test_clear_contradictions_are_refused(declared: str, data: bytes) -> None:
    assert contradicts(declared, sniff(data))


def test_recorded_type_prefers_the_declared_one_when_the_bytes_agree() -> None:
    assert recorded_type("image/jpg", sniff(jpeg_bytes())) == "image/jpeg"
    assert recorded_type("application/octet-stream", sniff(png_bytes())) == "image/png"
    assert recorded_type("text/plain", sniff(b"words")) is None
