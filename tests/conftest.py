from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError

from storage_service import objectstore
from tests.factories import Actor, make_actor
from variants import services as variants_services


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


@pytest.fixture(autouse=True)
def _variant_messages_only_when_asked(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Variants are sent to the broker after commit (every image upload makes a thumbnail).
    Only tests that ask for ``variant_messages`` send them: the e2e tests' session worker
    keeps consuming the test queue afterwards, and would otherwise process other tests'
    thumbnails while their tables are being truncated (a deadlock at teardown)."""
    if "variant_messages" not in request.fixturenames:
        monkeypatch.setattr(variants_services, "enqueue", lambda variant_id: None)


@pytest.fixture
def variant_messages() -> None:
    """Let this test send variant messages to the broker (see above)."""
