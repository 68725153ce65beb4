"""The in-process single-PUT presigner (sigv4.put_url), GETs signed at an instant
(objectstore.signed_get_url) and the storage's download URLs against
botocore addressed at the public endpoint: the same URLs, byte for byte, for every endpoint
shape, though the service itself reaches the store at another address.

(That the store accepts these URLs is shown by every upload and download test, which PUT and
GET real bytes through them.)
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from botocore.config import Config

from storage_service import objectstore, sigv4
from tests.storage import storages_with
from tests.unit.test_part_presigner import (
    PRIVATE_ENDPOINT,
    SIGNED_AT,
    STORE_SHAPES,
    frozen_botocore,
    reference_client,
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
    return reference_client().generate_presigned_url(
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
    scope = objectstore.storage().signing_scope
    for key, content_type, size, expires_in in CASES:
        ours = sigv4.put_url(
            scope,
            key=key,
            content_type=content_type,
            size=size,
            expires_in=expires_in,
            now=SIGNED_AT,
        )
        assert ours == botocore_url(key, content_type, size, expires_in)


@STORE_SHAPES
def test_download_urls_are_signed_for_the_public_endpoint(
    frozen_botocore: None, store_settings, endpoint: str | None, style: str, region: str
) -> None:
    use_store_shape(store_settings, endpoint, style, region)
    expires = datetime(2026, 11, 22, 5, 5, 6, tzinfo=UTC)
    parameters = {
        "ResponseContentDisposition": objectstore.content_disposition("résumé 1.pdf"),
        "ResponseContentType": "application/pdf",
        "ResponseExpires": expires,
    }
    for key, _, _, expires_in in CASES:
        ours = objectstore.storage().url(key, parameters=parameters, expire=expires_in)
        assert ours == reference_client().generate_presigned_url(
            "get_object",
            Params={"Bucket": objectstore.bucket(), "Key": key, **parameters},
            ExpiresIn=expires_in,
        )
        if endpoint:
            assert "store.private" not in ours


def test_the_service_itself_calls_the_private_endpoint(store_settings) -> None:
    use_store_shape(store_settings, "https://s3.example.com", "path", "eu-west-3")
    assert objectstore.client().meta.endpoint_url == "http://store.private:8333"


@STORE_SHAPES
def test_gets_signed_at_an_instant_are_botocore_s_for_the_public_endpoint(
    frozen_botocore: None, store_settings, endpoint: str | None, style: str, region: str
) -> None:
    use_store_shape(store_settings, endpoint, style, region)
    disposition = objectstore.content_disposition("résumé 1.pdf")
    for key, _, _, expires_in in CASES:
        ours = objectstore.signed_get_url(
            key=key,
            signed_at=SIGNED_AT,
            expires_in=expires_in,
            response_headers={
                "response-content-disposition": disposition,
                "response-content-type": "application/pdf",
                "response-cache-control": "public, max-age=86400, immutable",
            },
        )
        assert ours == reference_client().generate_presigned_url(
            "get_object",
            Params={
                "Bucket": objectstore.bucket(),
                "Key": key,
                "ResponseCacheControl": "public, max-age=86400, immutable",
                "ResponseContentDisposition": disposition,
                "ResponseContentType": "application/pdf",
            },
            ExpiresIn=expires_in,
        )
        assert objectstore.signed_get_url(key=key, signed_at=SIGNED_AT, expires_in=60) == (
            reference_client().generate_presigned_url(
                "get_object", Params={"Bucket": objectstore.bucket(), "Key": key}, ExpiresIn=60
            )
        )


def test_every_thread_s_client_signs_downloads_for_the_public_endpoint(store_settings) -> None:
    # django-storages makes one client per thread; each must resolve presigned requests
    # against the public endpoint, and only those.
    use_store_shape(store_settings, "https://s3.example.com", "path", "eu-west-3")
    urls: list[str] = []
    threads = [
        threading.Thread(target=lambda: urls.append(objectstore.storage().url("k")))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    urls.append(objectstore.storage().url("k"))
    assert len(urls) == 4
    public = f"https://s3.example.com/{objectstore.bucket()}/k?"
    assert all(url.startswith(public) for url in urls)
    assert objectstore.storage().connection.meta.client.meta.endpoint_url == PRIVATE_ENDPOINT


def test_a_get_signed_again_with_other_credentials_is_signed_by_them(
    frozen_botocore: None, store_settings
) -> None:
    # The same GET within a window is remembered (objectstore.window_url); credentials that
    # change (rotated keys, renewed temporary ones) must sign every URL from then on.
    use_store_shape(store_settings, "https://s3.example.com", "path", "eu-west-3")
    first = objectstore.signed_get_url(key="proj_01abc/obj", signed_at=SIGNED_AT, expires_in=60)
    assert first == objectstore.signed_get_url(
        key="proj_01abc/obj", signed_at=SIGNED_AT, expires_in=60
    )
    store_settings.STORAGES = storages_with(
        public_endpoint_url="https://s3.example.com",
        endpoint_url=PRIVATE_ENDPOINT,
        region_name="eu-west-3",
        access_key="AKIAROTATED",
        secret_key="another-secret",
        client_config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    rotated = objectstore.signed_get_url(key="proj_01abc/obj", signed_at=SIGNED_AT, expires_in=60)
    assert rotated != first
    assert "AKIAROTATED" in rotated
    assert rotated == reference_client().generate_presigned_url(
        "get_object",
        Params={"Bucket": objectstore.bucket(), "Key": "proj_01abc/obj"},
        ExpiresIn=60,
    )
