"""The in-process signer with credentials as AWS gives them: temporary ones carry their session
token exactly where botocore's presigner puts it, credentials near their expiry are refreshed
before a URL is signed with them, and a storage given no keys signs with what botocore's
default chain finds.

(tests/e2e/test_role_credentials.py shows a store accepting such URLs and refusing forged ones.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from unittest import mock
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.config import Config
from botocore.credentials import Credentials, RefreshableCredentials
from django.core.exceptions import ImproperlyConfigured
from mypy_boto3_s3 import S3Client

from storage_service import objectstore, sigv4
from tests.storage import storages_with
from tests.unit.test_part_presigner import SIGNED_AT, frozen_botocore

__all__ = ["frozen_botocore"]  # a fixture, used by name

PREFIX = "https://s3.example.com:8443/bucket-1/"
REGION = "eu-west-3"
# An STS session token is long and full of characters to escape.
TOKEN = "IQoJb3JpZ2luX2VjE+/=" * 40


def botocore_client(token: str | None) -> S3Client:
    return boto3.session.Session().client(
        "s3",
        endpoint_url="https://s3.example.com:8443",
        region_name=REGION,
        aws_access_key_id="ASIA/EXAMPLE+1",
        aws_secret_access_key="secret/with+odd=chars",
        aws_session_token=token,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )


def scope_with(credentials: Credentials) -> sigv4.Scope:
    return sigv4.Scope(object_url_prefix=PREFIX, region=REGION, credentials=credentials)


@pytest.mark.parametrize("token", [TOKEN, None])
def test_put_part_and_get_urls_are_botocore_s_with_or_without_a_token(
    frozen_botocore: None, token: str | None
) -> None:
    scope = scope_with(Credentials("ASIA/EXAMPLE+1", "secret/with+odd=chars", token))
    reference = botocore_client(token)
    key = "proj_01abc/odd key é+&=?#/x"

    put = sigv4.put_url(
        scope, key=key, content_type="image/png", size=42, expires_in=900, now=SIGNED_AT
    )
    assert put == reference.generate_presigned_url(
        "put_object",
        Params={
            "Bucket": "bucket-1",
            "Key": key,
            "ContentType": "image/png",
            "ContentLength": 42,
            "IfNoneMatch": "*",
        },
        ExpiresIn=900,
    )
    part = sigv4.PartUrlSigner(scope, key=key, upload_id="a/b+c", expires_in=60, now=SIGNED_AT)
    assert part.url(7, 1234) == reference.generate_presigned_url(
        "upload_part",
        Params={
            "Bucket": "bucket-1",
            "Key": key,
            "UploadId": "a/b+c",
            "PartNumber": 7,
            "ContentLength": 1234,
        },
        ExpiresIn=60,
    )
    get = sigv4.get_url(
        scope,
        key=key,
        expires_in=3600,
        overrides={
            "response-content-type": "image/png",
            "response-content-disposition": 'inline; filename="a b.png"',
            "response-cache-control": "public, max-age=3600",
        },
        now=SIGNED_AT,
    )
    assert get == reference.generate_presigned_url(
        "get_object",
        Params={
            "Bucket": "bucket-1",
            "Key": key,
            "ResponseCacheControl": "public, max-age=3600",
            "ResponseContentDisposition": 'inline; filename="a b.png"',
            "ResponseContentType": "image/png",
        },
        ExpiresIn=3600,
    )
    tokens = [parse_qs(urlsplit(url).query).get("X-Amz-Security-Token") for url in (put, get)]
    expected: list[list[str] | None] = [[token], [token]] if token else [None, None]
    assert tokens == expected


def test_a_get_signed_at_a_given_instant_is_the_same_url_every_time(
    frozen_botocore: None,
) -> None:
    scope = scope_with(Credentials("ASIA/EXAMPLE+1", "secret/with+odd=chars", TOKEN))
    urls = {
        sigv4.get_url(scope, key="k", expires_in=600, now=SIGNED_AT + timedelta(microseconds=us))
        for us in (0, 1, 1000)
    }
    assert len(urls) == 1
    assert urls == {
        botocore_client(TOKEN).generate_presigned_url(
            "get_object", Params={"Bucket": "bucket-1", "Key": "k"}, ExpiresIn=600
        )
    }
    later = sigv4.get_url(scope, key="k", expires_in=600, now=SIGNED_AT + timedelta(seconds=1))
    assert later not in urls


def test_a_get_refuses_an_override_it_does_not_know() -> None:
    scope = scope_with(Credentials("AKIA", "secret"))
    with pytest.raises(ValueError, match="not a response override: x-amz-acl"):
        sigv4.get_url(scope, key="k", expires_in=60, overrides={"x-amz-acl": "public-read"})


def session_metadata(number: int, lifetime: timedelta) -> dict[str, str]:
    return {
        "access_key": f"ASIASESSION{number}",
        "secret_key": f"secret-{number}",
        "token": f"token-{number}",
        "expiry_time": (datetime.now(UTC) + lifetime).isoformat(),
    }


def test_credentials_near_their_expiry_are_refreshed_before_signing() -> None:
    sessions = iter(range(2, 10))
    refreshes: list[int] = []

    def assume_role() -> dict[str, str]:
        number = next(sessions)
        refreshes.append(number)
        return session_metadata(number, timedelta(hours=1))

    # Five minutes left: inside botocore's mandatory refresh window, so the URL must not be
    # signed with them (a store would refuse it within minutes).
    credentials = RefreshableCredentials.create_from_metadata(
        session_metadata(1, timedelta(minutes=5)), refresh_using=assume_role, method="test-role"
    )
    scope = scope_with(credentials)

    put = sigv4.put_url(scope, key="k", content_type="text/plain", size=1, expires_in=900)
    part = sigv4.PartUrlSigner(scope, key="k", upload_id="u", expires_in=900).url(1, 1)
    get = sigv4.get_url(scope, key="k", expires_in=900)

    for url in (put, part, get):
        query = parse_qs(urlsplit(url).query)
        assert query["X-Amz-Security-Token"] == ["token-2"]
        assert query["X-Amz-Credential"][0].startswith("ASIASESSION2/")
    assert refreshes == [2]  # once: the new credentials have an hour left


def test_a_storage_given_no_keys_signs_with_the_default_chain_s_credentials(
    settings, tmp_path
) -> None:
    settings.STORAGES = storages_with(access_key=None, secret_key=None, security_token=None)
    chain = {
        "AWS_ACCESS_KEY_ID": "ASIAFROMENVIRONMENT",
        "AWS_SECRET_ACCESS_KEY": "env-secret",
        "AWS_SESSION_TOKEN": "env-token",
        # No shared files: only the environment can answer.
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
    }
    with mock.patch.dict(os.environ, chain):
        upload = objectstore.presign_put(
            key="p/k", content_type="text/plain", size=1, expires_in=60
        )
    query = parse_qs(urlsplit(upload.url).query)
    assert query["X-Amz-Security-Token"] == ["env-token"]
    assert query["X-Amz-Credential"][0].startswith("ASIAFROMENVIRONMENT/")


@pytest.fixture
def no_credentials(tmp_path) -> Iterator[None]:
    empty = {
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
        # The instance metadata service is not asked (no network wait in a test).
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    kept = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("AWS_") or name in {"AWS_STORAGE_BUCKET_NAME"}
    }
    with mock.patch.dict(os.environ, {**kept, **empty}, clear=True):
        yield


def test_a_storage_with_no_credentials_anywhere_says_how_to_give_them(
    settings, no_credentials: None
) -> None:
    settings.STORAGES = storages_with(access_key=None, secret_key=None, security_token=None)
    with pytest.raises(ImproperlyConfigured, match="give the process a role"):
        objectstore.presign_put(key="p/k", content_type="text/plain", size=1, expires_in=60)
