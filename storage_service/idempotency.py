"""The ``Idempotency-Key`` header's rules, shared by every route that creates an upload.

A view reads the key and the body's fingerprint with ``idempotency_of`` (no key: None;
malformed: 400); the owning app's service remembers the first answer under the key
(files/services/idempotency.py) and replays it, and the view answers through ``replayable``,
which marks a replay.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response

from storage_service.errors import ValidationError

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
# The header's WSGI environ name: read there directly, since request.headers builds a mapping
# of every header to look up this one.
_META_NAME = "HTTP_IDEMPOTENCY_KEY"
PATTERN = "^[!-~]{1,255}$"  # 1 to 255 printable ASCII characters
_KEY = re.compile(PATTERN)

# The header as the document states it: the same pattern the server checks.
IDEMPOTENCY_KEY = OpenApiParameter(
    HEADER,
    {"type": "string", "pattern": PATTERN, "minLength": 1, "maxLength": 255},
    OpenApiParameter.HEADER,
    description="Makes retries safe: the same key with the same body answers the same file "
    "and upload (with `Idempotent-Replayed: true`) for 24 hours; with another body, or on "
    "another route, 409 `IDEMPOTENCY_KEY_REUSED`.",
)
IDEMPOTENT_REPLAYED = OpenApiParameter(
    REPLAYED_HEADER,
    {"type": "string", "enum": ["true"]},
    OpenApiParameter.HEADER,
    response=[201],
    description="Present when the answer replays an earlier request with the same key.",
)


def idempotency_key(request: Request) -> str | None:
    """The request's key: 1 to 255 printable ASCII characters, else 400 VALIDATION_ERROR."""
    key = request.META.get(_META_NAME)
    if key is not None and not _KEY.match(key):
        raise ValidationError(
            f"{HEADER} must be 1 to 255 printable ASCII characters.",
            details={HEADER: ["Invalid header value."]},
        )
    return key


def request_fingerprint(body: Any) -> str:
    """A hash of the JSON body, independent of key order and whitespace."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def idempotency_of(request: Request) -> tuple[str | None, str]:
    """The request's key and its body's fingerprint (empty without a key: nothing keeps it)."""
    key = idempotency_key(request)
    return key, request_fingerprint(request.data) if key is not None else ""


def replayable(answer: Any, *, replayed: bool, status: int = 200) -> Response:
    """The answer, marked ``Idempotent-Replayed: true`` when it replays an earlier request."""
    response = Response(answer, status=status)
    if replayed:
        response[REPLAYED_HEADER] = "true"
    return response
