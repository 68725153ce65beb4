"""The in-process part presigner (sigv4.PartUrlSigner) against botocore: the same URL, byte
for byte, for every endpoint shape.

(That the store accepts these URLs is shown by every multipart test in tests/e2e, which
PUT real bytes through them.)
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.auth
import pytest
from botocore.config import Config
from mypy_boto3_s3 import S3Client

from storage_service import objectstore, sigv4
from tests.storage import storages_with

SIGNED_AT = datetime(2026, 11, 22, 4, 5, 6, 789000, tzinfo=UTC)


@pytest.fixture
def frozen_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    # botocore reads the time here when it signs; its timestamps are naive UTC.
    monkeypatch.setattr(
        botocore.auth,
        "get_current_datetime",
        lambda remove_tzinfo=True: SIGNED_AT.replace(tzinfo=None),
    )


@pytest.fixture
def store_settings(settings) -> Iterator[object]:
    yield settings


# One session: each new one loads botocore's service models again (a tenth of a second).
REFERENCE_SESSION = boto3.session.Session()


def reference_client() -> S3Client:
    """botocore addressed straight at the public endpoint of the shape in use: what a URL
    signed for that endpoint must be, byte for byte."""
    options = objectstore.storage()
    return REFERENCE_SESSION.client(
        "s3",
        endpoint_url=options.public_endpoint_url,
        region_name=options.region_name,
        aws_access_key_id=options.access_key,
        aws_secret_access_key=options.secret_key,
        config=options.client_config,
    )


def botocore_url(key: str, upload_id: str, number: int, length: int, expires_in: int) -> str:
    return reference_client().generate_presigned_url(
        "upload_part",
        Params={
            "Bucket": objectstore.bucket(),
            "Key": key,
            "UploadId": upload_id,
            "PartNumber": number,
            "ContentLength": length,
        },
        ExpiresIn=expires_in,
    )


CASES = [
    ("proj_01abc/obj_01def", "plain-upload-id", 1, 8 * 1024 * 1024, 900),
    ("proj_01abc/obj_01def", "a/b+c=d e_~x", 10_000, 1, 60),
    ("odd key/with spaces é+&=?#/x", "16966d37_6de42c7a", 537, 12345, 86400),
]


# Every endpoint shape a deployment may configure: (public endpoint, addressing style, region).
STORE_SHAPES = pytest.mark.parametrize(
    ("endpoint", "style", "region"),
    [
        ("http://127.0.0.1:8333", "path", "us-east-1"),
        ("https://s3.example.com", "path", "eu-west-3"),
        ("https://s3.example.com:443", "virtual", "eu-west-3"),
        ("http://store.internal:9000", "auto", "us-east-1"),
        (None, "auto", "us-east-1"),  # AWS itself
    ],
)


# Where the service itself reaches the store in these shapes: never in a presigned URL.
PRIVATE_ENDPOINT = "http://store.private:8333"


def use_store_shape(store_settings: Any, endpoint: str | None, style: str, region: str) -> None:
    """Point the object store's storage at one shape, with credentials that need escaping."""
    store_settings.STORAGES = storages_with(
        endpoint_url=PRIVATE_ENDPOINT if endpoint else None,
        public_endpoint_url=endpoint,
        region_name=region,
        access_key="AKIA/EXAMPLE+1",
        secret_key="secret/with+odd=chars",
        client_config=Config(signature_version="s3v4", s3={"addressing_style": style}),  # type: ignore[arg-type]
    )


@STORE_SHAPES
def test_part_urls_are_byte_identical_to_botocore(
    frozen_botocore: None, store_settings, endpoint: str | None, style: str, region: str
) -> None:
    use_store_shape(store_settings, endpoint, style, region)
    for key, upload_id, number, length, expires_in in CASES:
        signer = sigv4.PartUrlSigner(
            objectstore.storage().signing_scope,
            key=key,
            upload_id=upload_id,
            expires_in=expires_in,
            now=SIGNED_AT,
        )
        assert signer.url(number, length) == botocore_url(
            key, upload_id, number, length, expires_in
        )


def test_expiry_is_the_signed_second_plus_the_lifetime() -> None:
    signer = sigv4.PartUrlSigner(
        objectstore.storage().signing_scope, key="k", upload_id="u", expires_in=900, now=SIGNED_AT
    )
    assert signer.expires_at == datetime(2026, 11, 22, 4, 20, 6, tzinfo=UTC)


def test_each_part_signs_its_own_number_and_length(frozen_botocore: None) -> None:
    signer = sigv4.PartUrlSigner(
        objectstore.storage().signing_scope, key="k", upload_id="u", expires_in=900, now=SIGNED_AT
    )
    urls = {signer.url(1, 10), signer.url(2, 10), signer.url(1, 11)}
    assert len(urls) == 3
    assert "X-Amz-SignedHeaders=content-length%3Bhost" in signer.url(1, 10)
