"""Presigned GETs signed at a given instant, so that one delivery URL gives the very same
store URL for a whole window (caches of the store's answers then hit).

botocore always signs at the current second. This is SigV4's query signature for a GET with
``response-*`` overrides, built from the store's signing scope (storage_service/sigv4.py's
``Scope``, which the upload signer uses too); tests/delivery fetch its URLs from the real
store.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime
from functools import lru_cache
from urllib.parse import quote

from storage_service import objectstore, sigv4

_TIMESTAMP = "%Y%m%dT%H%M%SZ"


def _quote(value: str) -> str:
    return quote(value, safe="-_.~")


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


@lru_cache(maxsize=16)
def _signing_key(secret: str, datestamp: str, region: str) -> bytes:
    return _hmac(
        _hmac(_hmac(_hmac(f"AWS4{secret}".encode(), datestamp), region), "s3"), "aws4_request"
    )


def get_url(
    *, key: str, signed_at: datetime, expires_in: int, response_headers: dict[str, str]
) -> str:
    """A GET of ``key`` signed at ``signed_at`` (whole seconds, UTC), valid ``expires_in``
    seconds from then, whose answer carries ``response_headers`` (``response-content-type``
    and the like) whatever the object's own."""
    scope: sigv4.Scope = objectstore.storage().signing_scope
    amz_date = signed_at.astimezone(UTC).strftime(_TIMESTAMP)
    datestamp = amz_date[:8]
    credential = f"{scope.access_key}/{datestamp}/{scope.region}/s3/aws4_request"
    query = {
        **response_headers,
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": credential,
        "X-Amz-Date": amz_date,
        "X-Amz-Expires": str(int(expires_in)),
        "X-Amz-SignedHeaders": "host",
    }
    canonical_query = "&".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(query.items()))
    quoted_key = quote(key, safe="/~")
    request = (
        f"GET\n{scope.path}{quoted_key}\n{canonical_query}\nhost:{scope.host}\n\nhost\n"
        "UNSIGNED-PAYLOAD"
    )
    to_sign = (
        f"AWS4-HMAC-SHA256\n{amz_date}\n{datestamp}/{scope.region}/s3/aws4_request\n"
        f"{hashlib.sha256(request.encode()).hexdigest()}"
    )
    signature = hmac.new(
        _signing_key(scope.secret_key, datestamp, scope.region), to_sign.encode(), hashlib.sha256
    ).hexdigest()
    return f"{scope.object_url_prefix}{quoted_key}?{canonical_query}&X-Amz-Signature={signature}"
