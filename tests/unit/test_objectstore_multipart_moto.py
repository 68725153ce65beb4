"""The object store's multipart calls against moto: paging, refusals, idempotent abort."""

from __future__ import annotations

from collections.abc import Iterator

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


def test_parts_are_listed_across_pages(moto_store: None) -> None:
    upload_id = objectstore.multipart_start(key="k", content_type="text/plain")
    for number in range(1, 6):
        objectstore.client().upload_part(
            Bucket="unit-bucket", Key="k", UploadId=upload_id, PartNumber=number, Body=b"x" * number
        )

    held = objectstore.multipart_parts(key="k", upload_id=upload_id, page_size=2)

    assert held is not None
    assert [(p.number, p.size) for p in held] == [(n, n) for n in range(1, 6)]
    assert all(not p.etag.startswith('"') for p in held)


def test_unknown_upload_lists_none_and_aborts_fine(moto_store: None) -> None:
    assert objectstore.multipart_parts(key="k", upload_id="nope") is None
    objectstore.multipart_abort(key="k", upload_id="nope")  # no error


def test_complete_refuses_a_wrong_etag(moto_store: None) -> None:
    upload_id = objectstore.multipart_start(key="k", content_type="text/plain")
    objectstore.client().upload_part(
        Bucket="unit-bucket", Key="k", UploadId=upload_id, PartNumber=1, Body=b"abc"
    )
    with pytest.raises(objectstore.MultipartRefused):
        objectstore.multipart_complete(key="k", upload_id=upload_id, parts=[(1, "0" * 32)])

    held = objectstore.multipart_parts(key="k", upload_id=upload_id)
    assert held is not None
    assert objectstore.multipart_complete(key="k", upload_id=upload_id, parts=[(1, held[0].etag)])
    info = objectstore.head("k")
    assert info is not None and info.size == 3 and info.etag.endswith("-1")
