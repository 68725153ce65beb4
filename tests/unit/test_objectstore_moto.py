"""The object-store layer against moto: fast checks of what each call sends and reads."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import pytest
from moto import mock_aws

from storage_service import objectstore
from tests.storage import storages_with


@pytest.fixture
def moto_store(settings) -> Iterator[None]:
    settings.STORAGES = storages_with(
        endpoint_url=None, public_endpoint_url=None, bucket_name="unit-bucket"
    )
    with mock_aws():
        objectstore.client().create_bucket(Bucket="unit-bucket")
        yield


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


def test_presigned_get_overrides_what_the_uploader_stored(moto_store: None) -> None:
    download = objectstore.presign_get(key="p/k", expires_in=300)
    query = parse_qs(urlparse(download.url).query)
    assert query["response-content-disposition"] == ["attachment"]
    assert query["response-cache-control"] == ["private"]
    assert query["response-content-encoding"] == ["identity"]
    assert query["response-content-language"] == ["und"]
    assert query["X-Amz-Expires"] == ["300"]
    assert "response-content-type" not in query


def test_a_variant_is_written_and_read_back_through_the_storage(moto_store: None) -> None:
    data = b"\x89PNG and more bytes"
    etag = objectstore.write("p/variant", data, content_type="image/png")

    info = objectstore.head("p/variant")
    assert info is not None
    assert (info.size, info.content_type, info.etag) == (len(data), "image/png", etag)
    with objectstore.read("p/variant", max_bytes=len(data)) as source:
        assert source.read() == data
    with pytest.raises(objectstore.SourceTooLarge, match=f"The original is {len(data)} bytes"):
        objectstore.read("p/variant", max_bytes=len(data) - 1)
    with pytest.raises(objectstore.ObjectMissing):
        objectstore.read("p/gone", max_bytes=len(data))
    objectstore.write("p/empty", b"", content_type="image/png")
    with objectstore.read("p/empty", max_bytes=len(data)) as source:
        assert source.read() == b""
