from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from storage_service import objectstore
from tests.factories import Actor, make_actor


@pytest.fixture(scope="session", autouse=True)
def _test_bucket() -> Iterator[None]:
    """The suite's own bucket in the real object store (SeaweedFS under `make test`)."""
    s3 = objectstore.client()
    try:
        s3.create_bucket(Bucket=objectstore.bucket())
    except ClientError as exc:
        if exc.response["Error"]["Code"] not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
            raise
    yield


@pytest.fixture
def owner(db: None) -> Actor:
    """The project whose files the test works on."""
    return make_actor("owner", organization="acme")


@pytest.fixture
def sibling(db: None) -> Actor:
    """Another project of the owner's organization: it must see nothing of the owner's."""
    return make_actor("sibling", organization="acme")


@pytest.fixture
def outsider(db: None) -> Actor:
    """A project of another organization."""
    return make_actor("outsider", organization="globex")
