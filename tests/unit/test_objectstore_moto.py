"""The object-store layer against moto: fast checks of what each call sends and reads."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import boto3
import pytest
from moto import mock_aws

from storage_service import objectstore


@pytest.fixture
def moto_store(settings) -> Iterator[None]:
    settings.AWS_S3_ENDPOINT_URL = None
    settings.AWS_S3_PUBLIC_ENDPOINT_URL = None
    settings.AWS_STORAGE_BUCKET_NAME = "unit-bucket"
    with mock_aws():
        objectstore.reset_clients()
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="unit-bucket")
        yield
    objectstore.reset_clients()


def test_presigned_put_signs_type_length_and_if_none_match(moto_store: None) -> None:
    upload = objectstore.presign_put(key="p/k", content_type="image/png", size=42, expires_in=900)

    signed = parse_qs(urlparse(upload.url).query)["X-Amz-SignedHeaders"][0].split(";")
    assert {"content-length", "content-type", "if-none-match", "host"} <= set(signed)
    assert upload.headers == {"content-type": "image/png", "if-none-match": "*"}
    assert parse_qs(urlparse(upload.url).query)["X-Amz-Expires"] == ["900"]


def test_presigned_get_names_the_download(moto_store: None) -> None:
    download = objectstore.presign_get(
        key="p/k", expires_in=60, filename="résumé 1.pdf", content_type="application/pdf"
    )
    query = parse_qs(urlparse(download.url).query)
    disposition = query["response-content-disposition"][0]
    assert disposition.startswith('attachment; filename="r_sum_ 1.pdf"')
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9%201.pdf" in disposition
    assert query["response-content-type"] == ["application/pdf"]


def test_head_read_prefix_and_delete(moto_store: None) -> None:
    s3 = objectstore.client()
    s3.put_object(Bucket="unit-bucket", Key="a", Body=b"0123456789", ContentType="text/plain")

    info = objectstore.head("a")
    assert info is not None
    assert (info.size, info.content_type) == (10, "text/plain")
    assert info.etag == "781e5e245d69b566979b86e28d23f2c7"  # MD5 of the bytes
    assert objectstore.read_prefix("a", 4) == b"0123"
    assert objectstore.read_prefix("a", 100) == b"0123456789"
    assert objectstore.head("missing") is None

    objectstore.delete(["a", "missing"])  # an absent key deletes fine
    assert objectstore.head("a") is None


def test_empty_object_has_no_prefix(moto_store: None) -> None:
    objectstore.client().put_object(Bucket="unit-bucket", Key="empty", Body=b"")
    assert objectstore.read_prefix("empty", 8192) == b""
