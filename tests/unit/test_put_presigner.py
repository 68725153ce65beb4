"""The in-process single-PUT presigner (objectstore.put_url) against botocore's: the same URL,
byte for byte, for every endpoint shape.

(That the store accepts these URLs is shown by every upload test, which PUTs real bytes
through them.)
"""

from __future__ import annotations

from storage_service import objectstore
from tests.unit.test_part_presigner import (
    SIGNED_AT,
    STORE_SHAPES,
    frozen_botocore,
    store_settings,
    use_store_shape,
)

__all__ = ["frozen_botocore", "store_settings"]  # fixtures, used by name

CASES = [
    ("proj_01abc/obj_01def", "image/png", 1, 900),
    ("proj_01abc/obj_01def", "application/vnd.openxmlformats+xml", 5 * 1024**3, 60),
    ("odd key/with spaces é+&=?#/x", "text/plain;  charset=utf-8 ", 12345, 86400),
]


def botocore_url(key: str, content_type: str, size: int, expires_in: int) -> str:
    return objectstore.presign_client().generate_presigned_url(
        "put_object",
        Params={
            "Bucket": objectstore.bucket(),
            "Key": key,
            "ContentType": content_type,
            "ContentLength": size,
            "IfNoneMatch": "*",
        },
        ExpiresIn=expires_in,
    )


@STORE_SHAPES
def test_put_urls_are_byte_identical_to_botocore(
    frozen_botocore: None, store_settings, endpoint: str | None, style: str, region: str
) -> None:
    use_store_shape(store_settings, endpoint, style, region)
    for key, content_type, size, expires_in in CASES:
        ours = objectstore.put_url(
            key=key, content_type=content_type, size=size, expires_in=expires_in, now=SIGNED_AT
        )
        assert ours == botocore_url(key, content_type, size, expires_in)
