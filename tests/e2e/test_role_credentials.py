"""A deployment holding only a role's temporary credentials uploads, completes and downloads.

The store is moto's S3 with IAM authentication on: every call the service makes is checked
there, its signature and its session token against the STS session that issued them. moto does
not check presigned (query-string) requests, so they reach it through ``QueryAuthStore``: an
HTTP front that does what S3 does with one (the credential's STS session must exist, the token
must be that session's, the signature must be what botocore computes with that session's
secret, the URL must not have expired) and only then makes the request to moto with the same
session's credentials. A URL without its token, with another token or with another signature
is refused there, as S3 refuses it.

The credentials come from botocore's default chain, as in production: a profile that assumes
a role through STS (the shape of IRSA, an instance profile or SSO: temporary, refreshable),
or the AWS_* environment variables holding an assumed role's session.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from unittest import mock
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import boto3
import pytest
from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID, enable_iam_authentication
from moto.sts.models import sts_backends

from tests.factories import Actor
from tests.helpers import download, start_upload
from tests.multipart import MIB, PART, complete, put_all, random_bytes, start_multipart
from tests.storage import put_to, storages_with

pytestmark = pytest.mark.e2e

BUCKET = "role-bucket"
REGION = "us-east-1"
ALLOW_ALL = json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
)
ANYONE_MAY_ASSUME = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
    }
)


def session_as(credentials: Credentials) -> boto3.session.Session:
    # A session of its own: boto3's default one was made before the test set the environment.
    return boto3.session.Session(
        aws_access_key_id=credentials.access_key,
        aws_secret_access_key=credentials.secret_key,
        aws_session_token=credentials.token,
        region_name=REGION,
    )


def session_of(access_key: str) -> Credentials | None:
    """The STS session an access key belongs to, as moto issued it."""
    for role in sts_backends[DEFAULT_ACCOUNT_ID]["aws"].assumed_roles:
        if role.access_key_id == access_key:
            return Credentials(role.access_key_id, role.secret_access_key, role.session_token)
    return None


class QueryAuthStore(BaseHTTPRequestHandler):
    """S3's query-string authentication in front of moto (see the module's docstring)."""

    def do_PUT(self) -> None:
        self.answer("PUT")

    def do_GET(self) -> None:
        self.answer("GET")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the test's output stays the test's

    def refuse(self, status: int, code: str) -> None:
        body = f"<Error><Code>{code}</Code></Error>".encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def answer(self, method: str) -> None:
        parts = urlsplit(self.path)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        query = dict(pairs)
        access_key = query.get("X-Amz-Credential", "").split("/")[0]
        session = session_of(access_key)
        if session is None:
            return self.refuse(403, "InvalidAccessKeyId")
        if query.get("X-Amz-Security-Token") != session.token:
            return self.refuse(400, "InvalidToken")
        signed_at = datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        if datetime.now(UTC) > signed_at + timedelta(seconds=int(query["X-Amz-Expires"])):
            return self.refuse(403, "AccessDenied")
        if query.get("X-Amz-Signature") != self.signature(method, pairs, session):
            return self.refuse(403, "SignatureDoesNotMatch")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            status, headers, payload = self.forward(method, parts.path, query, body, session)
        except ClientError as exc:
            return self.refuse(
                exc.response["ResponseMetadata"]["HTTPStatusCode"], str(exc.response["Error"])
            )
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(payload))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def signature(self, method: str, pairs: list[tuple[str, str]], session: Credentials) -> str:
        """The signature botocore computes for this request with the session's secret."""
        query = dict(pairs)
        # The query as it came (botocore's canonical form takes its encoded pairs as they are).
        parts = urlsplit(self.path)
        unsigned = "&".join(
            pair for pair in parts.query.split("&") if not pair.startswith("X-Amz-Signature=")
        )
        signed = query["X-Amz-SignedHeaders"].split(";")
        request = AWSRequest(
            method=method,
            url=f"http://{self.headers['Host']}{parts.path}?{unsigned}",
            headers={name: self.headers.get(name, "") for name in signed},
        )
        request.context["timestamp"] = query["X-Amz-Date"]
        auth = S3SigV4QueryAuth(session, "s3", REGION, expires=int(query["X-Amz-Expires"]))
        canonical = auth.canonical_request(request)
        return str(auth.signature(auth.string_to_sign(request, canonical), request))

    def forward(
        self, method: str, path: str, query: dict[str, str], body: bytes, session: Credentials
    ) -> tuple[int, dict[str, str], bytes]:
        """The request made to moto, signed with the same session (moto checks it again)."""
        s3 = session_as(session).client("s3")
        bucket, key = path.lstrip("/").split("/", 1)
        where: dict[str, Any] = {"Bucket": bucket, "Key": unquote(key)}
        if method == "PUT" and "uploadId" in query:
            part = s3.upload_part(
                **where,
                UploadId=query["uploadId"],
                PartNumber=int(query["partNumber"]),
                Body=body,
            )
            return 200, {"ETag": part["ETag"]}, b""
        if method == "PUT":
            put = s3.put_object(
                **where,
                Body=body,
                ContentType=self.headers["Content-Type"],
                IfNoneMatch=self.headers["If-None-Match"],
            )
            return 200, {"ETag": put["ETag"]}, b""
        overrides: dict[str, Any] = {
            "ResponseContentDisposition": query.get("response-content-disposition"),
            "ResponseContentType": query.get("response-content-type"),
        }
        given = {name: value for name, value in overrides.items() if value is not None}
        got = s3.get_object(**where, **given)
        headers = {"Content-Type": got["ContentType"]}
        if got.get("ContentDisposition"):
            headers["Content-Disposition"] = got["ContentDisposition"]
        return 200, headers, got["Body"].read()


@pytest.fixture
def aws() -> Iterator[Credentials]:
    """moto's IAM, STS and S3 with a role the service may assume, and a user allowed to
    assume it; yields the user's keys (what a role's trust gives a pod or an instance)."""
    with mock_aws():
        iam = boto3.client("iam", region_name=REGION)
        iam.create_user(UserName="deployer")
        keys = iam.create_access_key(UserName="deployer")["AccessKey"]
        iam.put_user_policy(UserName="deployer", PolicyName="all", PolicyDocument=ALLOW_ALL)
        iam.create_role(RoleName="storage-service", AssumeRolePolicyDocument=ANYONE_MAY_ASSUME)
        iam.put_role_policy(RoleName="storage-service", PolicyName="s3", PolicyDocument=ALLOW_ALL)
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
        with enable_iam_authentication():
            yield Credentials(keys["AccessKeyId"], keys["SecretAccessKey"])


@pytest.fixture
def front() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), QueryAuthStore)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


ROLE_ARN = f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/storage-service"


def role_profile(tmp_path: Any, user: Credentials) -> dict[str, str]:
    """A profile that assumes the role through STS, as IRSA's or SSO's do: botocore's chain
    gets refreshable, temporary credentials from it."""
    config = tmp_path / "config"
    config.write_text(
        f"[profile storage]\nrole_arn = {ROLE_ARN}\nsource_profile = deployer\n"
        f"[profile deployer]\naws_access_key_id = {user.access_key}\n"
        f"aws_secret_access_key = {user.secret_key}\n"
    )
    return {"AWS_CONFIG_FILE": str(config), "AWS_PROFILE": "storage"}


def role_session_in_environment(tmp_path: Any, user: Credentials) -> dict[str, str]:
    """An assumed role's session in AWS_ACCESS_KEY_ID, _SECRET_ACCESS_KEY and _SESSION_TOKEN."""
    sts = session_as(user).client("sts")
    session = sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="storage-service")["Credentials"]
    return {
        "AWS_ACCESS_KEY_ID": session["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": session["SecretAccessKey"],
        "AWS_SESSION_TOKEN": session["SessionToken"],
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
    }


@pytest.fixture
def deployment(
    request: pytest.FixtureRequest, aws: Credentials, front: str, settings: Any, tmp_path: Any
) -> Iterator[None]:
    """The service configured with no keys at all: only the chain's temporary credentials."""
    chain = getattr(request, "param", role_profile)(tmp_path, aws)
    # Without mock_aws's own keys (the environment comes back whole at the end).
    kept = {
        name: value
        for name, value in os.environ.items()
        if name not in {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}
    }
    environment = {**kept, "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), **chain}
    with mock.patch.dict(os.environ, environment, clear=True):
        yield from use_storage(settings, front)


def use_storage(settings: Any, front: str) -> Iterator[None]:
    settings.STORAGES = storages_with(
        access_key=None,
        secret_key=None,
        security_token=None,
        endpoint_url=None,  # AWS itself, where moto answers
        public_endpoint_url=front,
        region_name=REGION,
        bucket_name=BUCKET,
    )
    yield


@pytest.mark.parametrize("deployment", [role_profile, role_session_in_environment], indirect=True)
def test_a_role_s_temporary_credentials_upload_complete_and_download(
    deployment: None, owner: Actor
) -> None:
    data = b"%PDF-1.4 signed by a role" + os.urandom(64)
    started = start_upload(owner, data, filename="role.pdf", contentType="application/pdf")
    assert "X-Amz-Security-Token=" in started["upload"]["url"]

    assert put_to(started["upload"], data).status_code == 200
    completed = owner.post(f"/v1/files/{started['file']['id']}/complete")
    assert completed.status_code == 200, completed.json()
    assert completed.json()["data"]["status"] == "uploaded"
    assert download(owner, started["file"]["id"]) == data


def test_a_role_s_temporary_credentials_upload_parts(deployment: None, owner: Actor) -> None:
    data = random_bytes(PART + MIB)
    started = start_multipart(owner, len(data), filename="parts.bin")
    assert all("X-Amz-Security-Token=" in part["url"] for part in started["upload"]["parts"])

    response = complete(owner, started["upload"]["id"], put_all(started["upload"], data))

    assert response.status_code == 200, response.json()
    assert download(owner, response.json()["id"]) == data


def without(url: str, name: str, value: str | None = None) -> str:
    """The URL with one query parameter dropped (or given another value)."""
    base, query = url.split("?", 1)
    kept = [pair for pair in query.split("&") if pair.split("=", 1)[0] != name]
    if value is not None:
        kept.append(f"{name}={quote(value, safe='-_.~')}")
    return f"{base}?{'&'.join(kept)}"


@pytest.mark.parametrize("deployment", [role_session_in_environment], indirect=True)
def test_the_store_refuses_a_url_whose_token_or_signature_is_not_the_session_s(
    deployment: None, owner: Actor
) -> None:
    data = b"guarded bytes"
    started = start_upload(owner, data, filename="g.txt", contentType="text/plain")
    upload = started["upload"]
    query = dict(parse_qsl(urlsplit(upload["url"]).query))
    token = query["X-Amz-Security-Token"]
    session = session_of(query["X-Amz-Credential"].split("/")[0])
    assert session is not None and session.token == token
    forged_token = token[:-4] + "AAAA"

    refused = [
        put_to({**upload, "url": without(upload["url"], "X-Amz-Security-Token")}, data),
        put_to(
            {**upload, "url": without(upload["url"], "X-Amz-Security-Token", forged_token)}, data
        ),
        put_to({**upload, "url": without(upload["url"], "X-Amz-Signature", "0" * 64)}, data),
    ]

    assert [(r.status_code, r.text) for r in refused] == [
        (400, "<Error><Code>InvalidToken</Code></Error>"),
        (400, "<Error><Code>InvalidToken</Code></Error>"),
        (403, "<Error><Code>SignatureDoesNotMatch</Code></Error>"),
    ]
    # Nothing arrived: complete says so. The genuine URL still works.
    response = owner.post(f"/v1/files/{started['file']['id']}/complete")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "OBJECT_NOT_FOUND")
    assert put_to(upload, data).status_code == 200
    # The calls the service makes itself are held to the session too: moto refuses a forged
    # token there.
    forged = session_as(Credentials(session.access_key, session.secret_key, forged_token))
    s3 = forged.client("s3")
    with pytest.raises(ClientError, match="InvalidToken"):
        s3.list_objects_v2(Bucket=BUCKET)
