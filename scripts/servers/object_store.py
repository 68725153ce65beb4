"""The dev object store: the one AWS_S3_ENDPOINT_URL names, else the local SeaweedFS
(started when nothing answers); its buckets, and the CORS rule browser uploads need."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from scripts.processes import ServiceError, log
from scripts.servers.common import (
    DEFAULT_BUCKET,
    DEFAULT_REGION,
    DEFAULT_S3_PORT,
    DEFAULT_TEST_BUCKET,
    DEV_ACCESS_KEY,
    DEV_SECRET_KEY,
    Services,
    env,
    port_is_free,
)
from scripts.servers.seaweedfs import s3_client, s3_probe, start_seaweedfs

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CORSRuleTypeDef


def ensure_buckets(client: S3Client, names: Sequence[str], region: str, retry_for: float) -> None:
    """Create each bucket unless it exists. ``retry_for`` covers a store that answers
    list_buckets a moment before it accepts writes."""
    for name in dict.fromkeys(names):
        deadline = time.monotonic() + retry_for
        while True:
            try:
                if region == "us-east-1":
                    client.create_bucket(Bucket=name)
                else:
                    client.create_bucket(
                        Bucket=name,
                        CreateBucketConfiguration={"LocationConstraint": region},  # type: ignore[typeddict-item]
                    )
                log(f"created bucket {name}")
                break
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                    break
                if time.monotonic() > deadline:
                    raise ServiceError(f"cannot create bucket {name}: {exc}") from exc
            except BotoCoreError as exc:
                if time.monotonic() > deadline:
                    raise ServiceError(f"cannot create bucket {name}: {exc}") from exc
            time.sleep(0.5)


# Pages on these origins may PUT and GET the local store's presigned URLs (browser uploads).
# The default is the browser-upload example's (examples/browser-upload) on its default port.
CORS_ORIGINS_ENV = "SERVICE_STORE_CORS_ORIGINS"
DEFAULT_CORS_ORIGINS = ("http://localhost:3000", "http://127.0.0.1:3000")


def cors_origins() -> list[str]:
    """SERVICE_STORE_CORS_ORIGINS: comma-separated origins (``*`` for any), or the default."""
    value = env(CORS_ORIGINS_ENV)
    if value is None:
        return list(DEFAULT_CORS_ORIGINS)
    origins = [item.strip().rstrip("/") for item in value.split(",") if item.strip()]
    for origin in origins:
        if origin != "*" and urlsplit(origin).scheme not in {"http", "https"}:
            raise ServiceError(f"{CORS_ORIGINS_ENV}: {origin!r} is not an http(s) origin")
    return origins


def cors_rule(origins: Sequence[str]) -> CORSRuleTypeDef:
    """What a browser's presigned PUT and GET need: the headers the PUT's signature covers
    (the browser sets content-length and host itself), and the ETag each part's PUT answers,
    which multipart complete needs. docs/operations.md gives the same rule for S3 and MinIO."""
    return {
        "AllowedOrigins": list(origins),
        "AllowedMethods": ["PUT", "GET"],
        "AllowedHeaders": ["content-type", "if-none-match"],
        "ExposeHeaders": ["ETag"],
        "MaxAgeSeconds": 3600,
    }


def ensure_cors(client: S3Client, names: Sequence[str], origins: Sequence[str]) -> None:
    """Put the browser rule on each bucket of the local store (SeaweedFS answers
    PutBucketCors like S3), replacing the rule a previous start put there."""
    for name in dict.fromkeys(names):
        try:
            client.put_bucket_cors(
                Bucket=name, CORSConfiguration={"CORSRules": [cors_rule(origins)]}
            )
        except (ClientError, BotoCoreError) as exc:
            raise ServiceError(f"cannot set the CORS rule of bucket {name}: {exc}") from exc
    log(f"browsers may upload to the store from {', '.join(origins)} ({CORS_ORIGINS_ENV})")


def ensure_object_store(services: Services) -> dict[str, str]:
    region = env("AWS_S3_REGION_NAME") or DEFAULT_REGION
    bucket = env("AWS_STORAGE_BUCKET_NAME") or DEFAULT_BUCKET
    # The test settings switch to this bucket so the suite never touches `make run`'s data.
    test_bucket = env("TEST_AWS_STORAGE_BUCKET_NAME") or DEFAULT_TEST_BUCKET
    endpoint = env("AWS_S3_ENDPOINT_URL")
    explicit = endpoint is not None
    retry_for = 5.0
    if endpoint is not None:
        # An explicit store: its credentials are the environment's (or boto3's usual chain).
        access_key = env("AWS_ACCESS_KEY_ID")
        secret_key = env("AWS_SECRET_ACCESS_KEY")
    else:
        try:
            s3_port = int(env("SEAWEEDFS_S3_PORT") or DEFAULT_S3_PORT)
        except ValueError as exc:
            raise ServiceError("SEAWEEDFS_S3_PORT must be a port number") from exc
        endpoint = f"http://127.0.0.1:{s3_port}"
        access_key, secret_key = DEV_ACCESS_KEY, DEV_SECRET_KEY
        probe = s3_client(endpoint, access_key, secret_key, DEFAULT_REGION, quick=True)
        problem = s3_probe(probe)
        if problem is None:
            log(f"reusing the object store already answering at {endpoint}")
        elif problem == "down" and port_is_free(s3_port):
            start_seaweedfs(services, s3_port, endpoint)
            retry_for = 15.0
        else:
            raise ServiceError(
                f"something other than our SeaweedFS answers at {endpoint} ({problem}). "
                "Stop it, or set SEAWEEDFS_S3_PORT to another port."
            )
    client = s3_client(endpoint, access_key, secret_key, region)
    ensure_buckets(client, [bucket, test_bucket], region, retry_for)
    if not explicit:  # a store of one's own keeps the CORS rule its operator gave it
        ensure_cors(client, [bucket, test_bucket], cors_origins())
    resolved = {
        "AWS_S3_ENDPOINT_URL": endpoint,
        "AWS_STORAGE_BUCKET_NAME": bucket,
        "AWS_S3_REGION_NAME": region,
    }
    # Unset credentials stay unset rather than empty, so settings fall back to their own
    # defaults or to boto3's credential chain instead of using "".
    if access_key:
        resolved["AWS_ACCESS_KEY_ID"] = access_key
    if secret_key:
        resolved["AWS_SECRET_ACCESS_KEY"] = secret_key
    return resolved
