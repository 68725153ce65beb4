"""SigV4 query signatures: a single PUT, the parts of a multipart upload, and a GET.

botocore builds and serializes a whole request for every presigned URL (about 0.3 ms each),
so presigning the 10,000 parts of a large upload would take seconds, and the single PUT of an
upload start would cost more than the rest of its request. A SigV4 query signature is a handful
of string operations, one SHA-256 and one HMAC once the day's signing key is known. The URLs
built here are botocore's, byte for byte (tests/unit/test_put_presigner.py,
test_part_presigner.py and test_signing_credentials.py compare them for every endpoint shape,
with and without a session token). Pure CPU: no network call.

The credentials are botocore's, as its default chain resolves them (environment, profile, IAM
role, web identity, SSO): each URL asks them for their current frozen value (Scope.frozen),
so temporary credentials are refreshed by botocore before they expire, and a URL signed with
them carries their session token (``X-Amz-Security-Token``) as botocore's presigner puts it.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from urllib.parse import quote, urlsplit

from botocore.credentials import Credentials, ReadOnlyCredentials

_SIGV4_TIMESTAMP = "%Y%m%dT%H%M%SZ"
# How long Scope.frozen reuses the credentials it last read.
FROZEN_REUSE_SECONDS = 1.0


def _host_header(url: str) -> str:
    # As botocore signs it: lowercase, no default port, no user info.
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    if parts.port is not None and parts.port != {"http": 80, "https": 443}.get(parts.scheme):
        host = f"{host}:{parts.port}"
    return host


@dataclass(frozen=True)
class Scope:
    """Where and as whom URLs are signed: the same for every key of a store."""

    # An object's public URL minus its key, as botocore builds it (objectstore.storage.FileStorage).
    object_url_prefix: str
    region: str
    # botocore's credentials (refreshable when temporary): read at each signing, never copied.
    credentials: Credentials = field(repr=False, compare=False)
    # Derived once: a quoted key holds no ``?`` or ``#``, so every URL's path is the prefix's
    # path and the key, and its Host header is the prefix's.
    path: str = field(init=False)
    host: str = field(init=False)
    credential_tail: str = field(init=False, repr=False)
    # The last frozen credentials and the monotonic second until which they are reused.
    _held: tuple[float, ReadOnlyCredentials] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", urlsplit(self.object_url_prefix).path)
        object.__setattr__(self, "host", _host_header(self.object_url_prefix))
        object.__setattr__(self, "credential_tail", _quote_param(f"/{self.region}/s3/aws4_request"))

    def frozen(self) -> ReadOnlyCredentials:
        """The credentials as they are now: botocore refreshes temporary ones here, before
        they expire (RefreshableCredentials.get_frozen_credentials).

        Refreshable credentials read the local time zone at every call (about 45 us, as much
        as the rest of a PUT URL); botocore starts renewing them 15 minutes before they
        expire, so their value is reused for a second at most.
        """
        now = time.monotonic()
        held = self._held
        if held is not None and now < held[0]:
            return held[1]
        credentials = self.credentials.get_frozen_credentials()
        object.__setattr__(self, "_held", (now + FROZEN_REUSE_SECONDS, credentials))
        return credentials


def _quote_param(value: str) -> str:
    # botocore's percent_encode: RFC 3986 unreserved characters only.
    return quote(value, safe="-_.~")


def _quote_key(key: str) -> str:
    return quote(key, safe="/~")


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


@lru_cache(maxsize=16)
def _signing_key(secret: str, datestamp: str, region: str) -> bytes:
    """SigV4's derived key: four HMACs, the same for every request of that day and region."""
    return _hmac(
        _hmac(_hmac(_hmac(f"AWS4{secret}".encode(), datestamp), region), "s3"), "aws4_request"
    )


def _signed_at(now: datetime | None) -> datetime:
    return (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)


def _amz_date(now: datetime | None) -> str:
    if now is None:
        # The clock's UTC second, as _signed_at gives it, for a fraction of the cost of
        # building the datetime and datetime.strftime.
        return time.strftime(_SIGV4_TIMESTAMP, time.gmtime())
    return _signed_at(now).strftime(_SIGV4_TIMESTAMP)


@lru_cache(maxsize=8)
def _quoted_signed_headers(signed_headers: str) -> str:
    return _quote_param(signed_headers)


@lru_cache(maxsize=8)
def _credential_head(access_key: str) -> str:
    # Quoting goes character by character in Python once a string holds a character to
    # escape, as every credential does ("/"): done once per access key.
    return _quote_param(f"{access_key}/")


@lru_cache(maxsize=8)
def _token_param(token: str) -> str:
    # A session token is about a kilobyte to quote; it changes only when botocore refreshes.
    return f"&X-Amz-Security-Token={_quote_param(token)}"


def _auth_query(
    scope: Scope, credentials: ReadOnlyCredentials, amz_date: str, expires_in: int, signed: str
) -> tuple[str, str]:
    """The signature's query parameters as the URL lists them (botocore's order: the token
    last) and as the canonical request sorts them (the token before X-Amz-SignedHeaders)."""
    # The credential is "<access key>/<date>/<region>/s3/aws4_request"; a date is digits.
    credential = f"{_credential_head(credentials.access_key)}{amz_date[:8]}{scope.credential_tail}"
    head = (
        f"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={credential}"
        f"&X-Amz-Date={amz_date}&X-Amz-Expires={int(expires_in)}"
    )
    signed_headers = f"&X-Amz-SignedHeaders={_quoted_signed_headers(signed)}"
    if credentials.token is None:  # botocore's test: an empty token is still sent
        query = head + signed_headers
        return query, query
    token = _token_param(credentials.token)
    return head + signed_headers + token, head + token + signed_headers


def _signature(
    scope: Scope, credentials: ReadOnlyCredentials, amz_date: str, canonical_request: str
) -> str:
    to_sign = (
        f"AWS4-HMAC-SHA256\n{amz_date}\n{amz_date[:8]}/{scope.region}/s3/aws4_request\n"
        f"{hashlib.sha256(canonical_request.encode()).hexdigest()}"
    )
    signing_key = _signing_key(credentials.secret_key, amz_date[:8], scope.region)
    return hmac.digest(signing_key, to_sign.encode(), "sha256").hex()


def put_url(
    scope: Scope,
    *,
    key: str,
    content_type: str,
    size: int,
    expires_in: int,
    now: datetime | None = None,
) -> str:
    """A presigned PutObject URL signing content-length, content-type, host and
    If-None-Match: *, so the store itself refuses bytes of another length or type and a second
    PUT over an object already written."""
    amz_date = _amz_date(now)
    credentials = scope.frozen()
    quoted = _quote_key(key)
    signed_headers = "content-length;content-type;host;if-none-match"
    url_query, canonical_query = _auth_query(
        scope, credentials, amz_date, expires_in, signed_headers
    )
    # botocore's canonical header value: trimmed, inner runs of spaces collapsed.
    canonical_type = " ".join(content_type.split())
    request = (
        f"PUT\n{scope.path}{quoted}\n{canonical_query}\n"
        f"content-length:{size}\ncontent-type:{canonical_type}\nhost:{scope.host}\n"
        f"if-none-match:*\n\n{signed_headers}\nUNSIGNED-PAYLOAD"
    )
    signature = _signature(scope, credentials, amz_date, request)
    return f"{scope.object_url_prefix}{quoted}?{url_query}&X-Amz-Signature={signature}"


# The response headers a presigned GET may override, in the order botocore lists them (its
# GetObject members), which is also their sorted order.
RESPONSE_OVERRIDES = (
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
)


def get_url(
    scope: Scope,
    *,
    key: str,
    expires_in: int,
    overrides: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> str:
    """A presigned GetObject URL, signed at ``now`` (the current second when None).

    ``overrides`` maps names of RESPONSE_OVERRIDES (``response-content-disposition``,
    ``response-content-type``, ``response-cache-control``, ...) to the header values the store
    answers with instead of the stored ones; they are part of the signature. The URL is
    botocore's ``generate_presigned_url("get_object", ...)`` with the matching Response*
    parameters, byte for byte.

    The same ``now``, expiry, key, overrides and credentials give the same URL, so callers
    that round ``now`` to a window (cacheable URLs) get one URL per window. Temporary
    credentials change that: a URL is signed by the credentials current at the call, and
    the store refuses it once they have expired, whatever its own expiry says.
    """
    amz_date = _amz_date(now)
    credentials = scope.frozen()
    quoted = _quote_key(key)
    given = dict(overrides or {})
    unknown = set(given) - set(RESPONSE_OVERRIDES)
    if unknown:
        raise ValueError(f"not a response override: {', '.join(sorted(unknown))}")
    operation = "".join(
        f"{name}={_quote_param(given[name])}&" for name in RESPONSE_OVERRIDES if name in given
    )
    url_query, canonical_query = _auth_query(scope, credentials, amz_date, expires_in, "host")
    # Sorted, "X-Amz-*" comes before "response-*" (upper case before lower).
    canonical = f"{canonical_query}&{operation[:-1]}" if operation else canonical_query
    request = f"GET\n{scope.path}{quoted}\n{canonical}\nhost:{scope.host}\n\nhost\nUNSIGNED-PAYLOAD"
    signature = _signature(scope, credentials, amz_date, request)
    return f"{scope.object_url_prefix}{quoted}?{operation}{url_query}&X-Amz-Signature={signature}"


class PartUrlSigner:
    """Presigned UploadPart URLs for one multipart upload, all signed at one instant.

    Each URL signs ``content-length`` (as put_url does), so the store itself refuses a part of
    any other length: a client cannot store a wrong-size part by mistake. Only the part number
    and length change from one part to the next, so the canonical request's common head is
    hashed once and each URL hashes only its own tail.
    """

    def __init__(
        self,
        scope: Scope,
        *,
        key: str,
        upload_id: str,
        expires_in: int,
        now: datetime | None = None,
    ) -> None:
        signed_at = _signed_at(now)
        amz_date = signed_at.strftime(_SIGV4_TIMESTAMP)
        credentials = scope.frozen()
        quoted = _quote_key(key)
        url_query, canonical_query = _auth_query(
            scope, credentials, amz_date, expires_in, "content-length;host"
        )
        upload = _quote_param(upload_id)
        # The URL lists the operation's parameters first, then the signature's (botocore's
        # order); the canonical request sorts them: X-Amz-* < partNumber < uploadId.
        self._url_head = f"{scope.object_url_prefix}{quoted}?uploadId={upload}&partNumber="
        self._url_tail = f"&{url_query}&X-Amz-Signature="
        self._request_head = hashlib.sha256(
            f"PUT\n{scope.path}{quoted}\n{canonical_query}&partNumber=".encode()
        )
        self._request_mid = f"&uploadId={upload}\ncontent-length:"
        self._request_tail = f"\nhost:{scope.host}\n\ncontent-length;host\nUNSIGNED-PAYLOAD"
        self._to_sign_head = (
            f"AWS4-HMAC-SHA256\n{amz_date}\n{amz_date[:8]}/{scope.region}/s3/aws4_request\n"
        )
        self._key = _signing_key(credentials.secret_key, amz_date[:8], scope.region)
        self.expires_at = signed_at + timedelta(seconds=expires_in)

    def url(self, part_number: int, content_length: int) -> str:
        request = self._request_head.copy()
        request.update(
            f"{part_number}{self._request_mid}{content_length}{self._request_tail}".encode()
        )
        to_sign = self._to_sign_head + request.hexdigest()
        signature = hmac.digest(self._key, to_sign.encode(), "sha256").hex()
        return f"{self._url_head}{part_number}{self._url_tail}{signature}"
