"""The object-store client: presigning, HEAD, ranged reads and deletes.

Presigning is pure CPU (SigV4 over the request), so a presigned URL costs no round trip to
the store. Two clients are kept: one addressed at the endpoint the service reaches, one at the
public endpoint clients reach (they differ when the store sits behind another hostname); a
presigned URL is only valid for the host it was signed for.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.utils import timezone

from storage_service.errors import StorageUnavailable
from storage_service.ids import new_id

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_lock = threading.Lock()


@dataclass(frozen=True)
class PresignedUpload:
    url: str
    method: str
    headers: dict[str, str]
    expires_at: datetime


@dataclass(frozen=True)
class PresignedDownload:
    url: str
    expires_at: datetime


@dataclass(frozen=True)
class ObjectInfo:
    size: int
    etag: str
    content_type: str | None
    sha256: str | None


def new_key(project_id: str) -> str:
    """The key of a new object: the project's id, then a random id. Never derived from a
    filename or path, so renames and moves never touch the store and keys leak nothing."""
    return f"{project_id}/{new_id('obj')}"


def _make_client(
    endpoint_url: str | None,
    *,
    attempts: int | None = None,
    connect_timeout: float | None = None,
    read_timeout: float | None = None,
) -> S3Client:
    """A client whose every call ends within the API's own budget (settings: "Locks and
    timeouts"): botocore's defaults (3 attempts of up to 60 s reads) outlast gunicorn's
    worker timeout, so a hung store killed the worker instead of answering 503."""
    if attempts is None:
        attempts = settings.SERVICE_STORE_MAX_ATTEMPTS
    if connect_timeout is None:
        connect_timeout = settings.SERVICE_STORE_CONNECT_TIMEOUT_SECONDS
    if read_timeout is None:
        read_timeout = settings.SERVICE_STORE_READ_TIMEOUT_SECONDS
    config = Config(
        signature_version="s3v4",
        s3=cast(Any, {"addressing_style": settings.AWS_S3_ADDRESSING_STYLE}),
        # total_max_attempts counts the first attempt; botocore's max_attempts does not.
        retries={"total_max_attempts": attempts, "mode": "standard"},
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        max_pool_connections=32,
    )
    with _lock:  # boto3's default session is not thread-safe while creating clients
        return boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=settings.AWS_S3_REGION_NAME,
            aws_access_key_id=settings.AWS_ACCESS_KEY_ID,
            aws_secret_access_key=settings.AWS_SECRET_ACCESS_KEY,
            config=config,
        )


@lru_cache(maxsize=1)
def client() -> S3Client:
    return _make_client(settings.AWS_S3_ENDPOINT_URL)


@lru_cache(maxsize=1)
def presign_client() -> S3Client:
    return _make_client(settings.AWS_S3_PUBLIC_ENDPOINT_URL)


@lru_cache(maxsize=1)
def probe_client(timeout: float) -> S3Client:
    """For readiness probes: one attempt and short timeouts. client() retries and waits up to
    its whole call budget, right for uploads and wrong for a probe that must answer before the
    load balancer gives up on it."""
    return _make_client(
        settings.AWS_S3_ENDPOINT_URL, attempts=1, connect_timeout=timeout, read_timeout=timeout
    )


def reset_clients() -> None:
    """Forget cached clients (tests that change settings)."""
    client.cache_clear()
    presign_client.cache_clear()
    probe_client.cache_clear()
    _object_url_prefix.cache_clear()
    _object_url_parts.cache_clear()


def bucket() -> str:
    return str(settings.AWS_STORAGE_BUCKET_NAME)


def presign_put(*, key: str, content_type: str, size: int, expires_in: int) -> PresignedUpload:
    """A PUT URL whose signature covers the content type, the exact length and If-None-Match.

    The store itself then refuses bytes of another length or type, and refuses a second PUT
    over an object already written, so verified bytes can never be swapped afterwards.
    """
    # Signed here (put_url), not by botocore: the same URL in a hundredth of the time.
    url = put_url(key=key, content_type=content_type, size=size, expires_in=expires_in)
    return PresignedUpload(
        url=url,
        method="PUT",
        headers={"content-type": content_type, "if-none-match": "*"},
        expires_at=timezone.now() + timedelta(seconds=expires_in),
    )


def content_disposition(filename: str) -> str:
    # RFC 6266/5987: an ASCII fallback plus the exact UTF-8 name.
    ascii_name = filename.encode("ascii", "replace").decode().replace('"', "'").replace("?", "_")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"


# What every download says about its bytes, whatever the uploader sent with its PUT. A
# presigned PUT cannot forbid a header it does not sign, and the store keeps Content-Encoding,
# Cache-Control, Content-Language, Content-Disposition and Expires from the PUT and serves them
# back on every GET: an uploader could make browsers gunzip, cache publicly, or show a file
# inline. The GET's response-* overrides (part of its signature) replace them all. (x-amz-*
# headers, metadata and redirects included, need no override: the store refuses a presigned
# request carrying one it was not signed with.)
DOWNLOAD_CACHE_CONTROL = "private"
# The stored bytes are exactly the uploaded file (never a compressed form of it), so "no
# encoding" is the truth; a client that sent Content-Encoding: gzip gets its bytes back as is.
DOWNLOAD_CONTENT_ENCODING = "identity"
# BCP 47 "undetermined": the service knows nothing of the file's language.
DOWNLOAD_CONTENT_LANGUAGE = "und"


def presign_get(
    *, key: str, expires_in: int, filename: str | None = None, content_type: str | None = None
) -> PresignedDownload:
    expires_at = timezone.now() + timedelta(seconds=expires_in)
    params: dict[str, Any] = {
        "Bucket": bucket(),
        "Key": key,
        "ResponseCacheControl": DOWNLOAD_CACHE_CONTROL,
        "ResponseContentEncoding": DOWNLOAD_CONTENT_ENCODING,
        "ResponseContentLanguage": DOWNLOAD_CONTENT_LANGUAGE,
        # No use caching the answer beyond the URL's own life.
        "ResponseExpires": expires_at,
        "ResponseContentDisposition": content_disposition(filename) if filename else "attachment",
    }
    if content_type:
        params["ResponseContentType"] = content_type
    url = presign_client().generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in)
    return PresignedDownload(url=url, expires_at=expires_at)


def _is_missing(exc: ClientError) -> bool:
    code = str(exc.response.get("Error", {}).get("Code", ""))
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in {"404", "NoSuchKey", "NotFound"} or status == 404


def head(key: str) -> ObjectInfo | None:
    """The stored object's real size, etag and checksum, or None when there is none."""
    try:
        response = client().head_object(Bucket=bucket(), Key=key, ChecksumMode="ENABLED")
    except ClientError as exc:
        if _is_missing(exc):
            return None
        raise StorageUnavailable("The object store refused the request.") from exc
    except BotoCoreError as exc:
        raise StorageUnavailable("The object store is unreachable; try again.") from exc
    return ObjectInfo(
        size=int(response["ContentLength"]),
        etag=str(response.get("ETag", "")).strip('"'),
        content_type=response.get("ContentType"),
        sha256=response.get("ChecksumSHA256"),
    )


def read_prefix(key: str, length: int) -> bytes:
    """The first ``length`` bytes of an object (fewer if it is shorter)."""
    if length <= 0:
        return b""
    try:
        response = client().get_object(Bucket=bucket(), Key=key, Range=f"bytes=0-{length - 1}")
        return response["Body"].read()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "InvalidRange":
            return b""  # an empty object has no first byte to range over
        if _is_missing(exc):
            return b""
        raise StorageUnavailable("The object store refused the request.") from exc
    except BotoCoreError as exc:
        raise StorageUnavailable("The object store is unreachable; try again.") from exc


def delete(keys: list[str]) -> None:
    """Delete objects; deleting one that is already gone succeeds (S3 semantics)."""
    for start in range(0, len(keys), 1000):  # DeleteObjects takes at most 1,000 keys
        chunk = keys[start : start + 1000]
        try:
            response = client().delete_objects(
                Bucket=bucket(),
                Delete={"Objects": [{"Key": key} for key in chunk], "Quiet": True},
            )
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable("The object store could not delete objects.") from exc
        errors = [e for e in response.get("Errors", []) if e.get("Code") != "NoSuchKey"]
        if errors:
            raise StorageUnavailable(f"The object store could not delete {len(errors)} object(s).")


# --- Multipart uploads -----------------------------------------------------------------------
#
# The store's own upload id is a bearer of the upload: it stays in this module's callers'
# database rows and is never a field of a response, an event or a client-facing message.
# Only the presigned part URLs carry it, opaquely, because the store requires it there.


class MultipartRefused(Exception):
    """The store refused to assemble the parts (a part missing, an etag that does not match)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class HeldPart:
    number: int
    etag: str  # without the quotes S3 puts around it
    size: int
    last_modified: datetime | None = None


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def multipart_start(*, key: str, content_type: str) -> str:
    """Start a multipart upload at the store; returns the store's upload id."""
    try:
        response = client().create_multipart_upload(
            Bucket=bucket(), Key=key, ContentType=content_type
        )
    except (ClientError, BotoCoreError) as exc:
        raise StorageUnavailable("The object store could not start the upload; retry.") from exc
    return str(response["UploadId"])


def multipart_parts(*, key: str, upload_id: str, page_size: int = 1000) -> list[HeldPart] | None:
    """Every part the store holds for the upload, following its pages; None if it has none.

    S3 answers at most 1,000 parts per ListParts call, so an upload of up to 10,000 parts
    takes up to ten calls. S3 keeps only the last upload of a part number; SeaweedFS keeps
    (and lists) every one, in no set order, and assembles the one whose etag complete names.
    """
    parts: list[HeldPart] = []
    marker = 0
    while True:
        try:
            response = client().list_parts(
                Bucket=bucket(),
                Key=key,
                UploadId=upload_id,
                MaxParts=page_size,
                PartNumberMarker=marker,
            )
        except ClientError as exc:
            if _error_code(exc) == "NoSuchUpload":
                return None
            raise StorageUnavailable("The object store refused to list the parts.") from exc
        except BotoCoreError as exc:
            raise StorageUnavailable("The object store is unreachable; try again.") from exc
        parts.extend(
            HeldPart(
                number=int(part["PartNumber"]),
                etag=str(part.get("ETag", "")).strip('"'),
                size=int(part["Size"]),
                last_modified=part.get("LastModified"),
            )
            for part in response.get("Parts", [])
        )
        next_marker = int(response.get("NextPartNumberMarker") or 0)
        if not response.get("IsTruncated") or next_marker <= marker:
            return parts
        marker = next_marker


def multipart_complete(*, key: str, upload_id: str, parts: list[tuple[int, str]]) -> bool:
    """Assemble the parts into the object. False when the store no longer has the upload.

    ``parts`` are (part number, etag) in order. Raises MultipartRefused when the store
    refuses the list (a part missing or replaced since it was listed).
    """
    try:
        client().complete_multipart_upload(
            Bucket=bucket(),
            Key=key,
            UploadId=upload_id,
            MultipartUpload={
                "Parts": [{"PartNumber": number, "ETag": f'"{etag}"'} for number, etag in parts]
            },
        )
    except ClientError as exc:
        code = _error_code(exc)
        if code == "NoSuchUpload":
            return False
        if code in {"InvalidPart", "InvalidPartOrder", "EntityTooSmall"}:
            raise MultipartRefused(code) from exc
        raise StorageUnavailable("The object store could not assemble the parts.") from exc
    except BotoCoreError as exc:
        raise StorageUnavailable("The object store is unreachable; try again.") from exc
    return True


def multipart_abort(*, key: str, upload_id: str) -> None:
    """Abort the upload and release its parts; an upload the store no longer has is fine."""
    try:
        client().abort_multipart_upload(Bucket=bucket(), Key=key, UploadId=upload_id)
    except ClientError as exc:
        if _error_code(exc) == "NoSuchUpload":
            return
        raise StorageUnavailable("The object store could not abort the upload.") from exc
    except BotoCoreError as exc:
        raise StorageUnavailable("The object store is unreachable; try again.") from exc


# --- The part presigner ----------------------------------------------------------------------
#
# botocore spends about 0.3 ms on each presigned URL (it builds and serializes a whole request
# each time), so presigning the 10,000 parts of a large upload would take seconds. A SigV4
# query signature is a handful of string operations, one SHA-256 and one HMAC once the signing
# key is known; for the parts of one upload only the part number (and the last part's length)
# change. PartUrlSigner builds the same URLs as botocore, byte for byte
# (tests/unit/test_part_presigner.py proves it), in a few microseconds each.

_SIGV4_TIMESTAMP = "%Y%m%dT%H%M%SZ"


def _quote_param(value: str) -> str:
    # botocore's percent_encode: RFC 3986 unreserved characters only.
    return quote(value, safe="-_.~")


@lru_cache(maxsize=1)
def _object_url_prefix() -> str:
    """An object's URL minus its key, as botocore builds it for the public endpoint.

    Asked of botocore once per process, so the scheme, host, port and addressing style
    (path, virtual or auto) are exactly botocore's for any endpoint and bucket.
    """
    probe = "k"
    url = presign_client().generate_presigned_url(
        "get_object", Params={"Bucket": bucket(), "Key": probe}, ExpiresIn=60
    )
    base = url.split("?", 1)[0]
    if not base.endswith("/" + probe):
        raise RuntimeError(f"unexpected presigned URL shape: {base}")
    return base[: -len(probe)]


@lru_cache(maxsize=1)
def _object_url_parts() -> tuple[str, str, str]:
    """The object URL prefix, its path and its Host header: the same for every key (a
    quoted key holds no ``?`` or ``#``, so a URL's path is the prefix's path and the key)."""
    prefix = _object_url_prefix()
    return prefix, urlsplit(prefix).path, _host_header(prefix)


def _host_header(url: str) -> str:
    # As botocore signs it: lowercase, no default port, no user info.
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    if parts.port is not None and parts.port != {"http": 80, "https": 443}.get(parts.scheme):
        host = f"{host}:{parts.port}"
    return host


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


@lru_cache(maxsize=8)
@lru_cache(maxsize=16)
def _signing_key(secret: str, datestamp: str, region: str) -> bytes:
    """SigV4's derived key: four HMACs, the same for every request of that day and region."""
    return _hmac(
        _hmac(_hmac(_hmac(f"AWS4{secret}".encode(), datestamp), region), "s3"), "aws4_request"
    )


class PartUrlSigner:
    """Presigned UploadPart URLs for one multipart upload, all signed at one instant.

    Each URL signs ``content-length`` (as presign_put does), so the store itself refuses a
    part of any other length: a client cannot store a wrong-size part by mistake.
    """

    def __init__(
        self, *, key: str, upload_id: str, expires_in: int, now: datetime | None = None
    ) -> None:
        signed_at = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
        amz_date = signed_at.strftime(_SIGV4_TIMESTAMP)
        region = str(settings.AWS_S3_REGION_NAME)
        scope = f"{amz_date[:8]}/{region}/s3/aws4_request"
        base = _object_url_prefix() + quote(key, safe="/~")
        auth_query = "&".join(
            [
                "X-Amz-Algorithm=AWS4-HMAC-SHA256",
                f"X-Amz-Credential={_quote_param(f'{settings.AWS_ACCESS_KEY_ID}/{scope}')}",
                f"X-Amz-Date={amz_date}",
                f"X-Amz-Expires={int(expires_in)}",
                "X-Amz-SignedHeaders=content-length%3Bhost",
            ]
        )
        upload = _quote_param(upload_id)
        # The URL lists the operation's parameters first, then the signature's (botocore's
        # order); the canonical request sorts them: X-Amz-* < partNumber < uploadId.
        self._url_head = f"{base}?uploadId={upload}&partNumber="
        self._url_tail = f"&{auth_query}&X-Amz-Signature="
        # The canonical request up to the part number is the same for every part: hash it
        # once, and let each URL hash only its own tail (a copy of the hash state).
        self._request_head = hashlib.sha256(
            f"PUT\n{urlsplit(base).path}\n{auth_query}&partNumber=".encode()
        )
        self._request_mid = f"&uploadId={upload}\ncontent-length:"
        self._request_tail = f"\nhost:{_host_header(base)}\n\ncontent-length;host\nUNSIGNED-PAYLOAD"
        self._to_sign_head = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n"
        self._key = _signing_key(str(settings.AWS_SECRET_ACCESS_KEY), amz_date[:8], region)
        self.expires_at = signed_at + timedelta(seconds=expires_in)

    def url(self, part_number: int, content_length: int) -> str:
        request = self._request_head.copy()
        request.update(
            f"{part_number}{self._request_mid}{content_length}{self._request_tail}".encode()
        )
        to_sign = self._to_sign_head + request.hexdigest()
        signature = hmac.digest(self._key, to_sign.encode(), "sha256").hex()
        return f"{self._url_head}{part_number}{self._url_tail}{signature}"


def put_url(
    *, key: str, content_type: str, size: int, expires_in: int, now: datetime | None = None
) -> str:
    """presign_put's URL built here, as botocore builds it, byte for byte (issue 14).

    botocore builds and serializes a whole request per URL (about 0.4 ms); this is the
    SigV4 query signature alone (tests/unit/test_put_presigner.py compares the two). It signs
    the same headers: content-length, content-type, host and if-none-match.
    """
    signed_at = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    amz_date = signed_at.strftime(_SIGV4_TIMESTAMP)
    region = str(settings.AWS_S3_REGION_NAME)
    scope = f"{amz_date[:8]}/{region}/s3/aws4_request"
    prefix, prefix_path, host = _object_url_parts()
    quoted = quote(key, safe="/~")
    base = prefix + quoted
    signed_headers = "content-length;content-type;host;if-none-match"
    auth_query = "&".join(
        [
            "X-Amz-Algorithm=AWS4-HMAC-SHA256",
            f"X-Amz-Credential={_quote_param(f'{settings.AWS_ACCESS_KEY_ID}/{scope}')}",
            f"X-Amz-Date={amz_date}",
            f"X-Amz-Expires={int(expires_in)}",
            f"X-Amz-SignedHeaders={_quote_param(signed_headers)}",
        ]
    )
    # botocore's canonical header value: trimmed, inner runs of spaces collapsed.
    canonical_type = " ".join(content_type.split())
    request = (
        f"PUT\n{prefix_path}{quoted}\n{auth_query}\n"
        f"content-length:{size}\ncontent-type:{canonical_type}\nhost:{host}\n"
        f"if-none-match:*\n\n{signed_headers}\nUNSIGNED-PAYLOAD"
    )
    to_sign = (
        f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"
    )
    key_bytes = _signing_key(str(settings.AWS_SECRET_ACCESS_KEY), amz_date[:8], region)
    signature = hmac.digest(key_bytes, to_sign.encode(), "sha256").hex()
    return f"{base}?{auth_query}&X-Amz-Signature={signature}"
