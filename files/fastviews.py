"""The fast lanes of the files endpoints (issue 14; storage_service/fastlane.py says how a lane
works): the single-file GET, the list, and upload start, each served in the fewest round
trips (the key and the resource in one SQL statement for both reads, one statement for the
upload's writes) through the same selectors, services and shapes as files/views.py.

Each ``serve`` declines (returns None) before counting the request whenever the DRF view
would answer anything but success, so every refusal is the DRF view's own answer, in its own
order. One exception, after counting: an upload whose key was revoked since this process last
resolved it is found revoked by the upload's own statement, which then writes nothing; the
request was counted against the revoked key's budget, which no one can spend any more.
"""

from __future__ import annotations

import io
from typing import Any

from django.http import HttpRequest
from rest_framework.exceptions import APIException, Throttled

from accounts.auth import admit, well_formed_bearer
from accounts.models import ApiKey
from accounts.selectors import api_key_forget, api_key_known, api_key_resolve
from accounts.tenancy import Tenant
from files import selectors, services
from files.serializers import (
    UploadRequest,
    file_json,
    file_with_upload_json,
    upload_arguments,
)
from storage_service.errors import ApiError
from storage_service.fastlane import Answer
from storage_service.parsers import StrictJSONParser
from storage_service.serializers import validated

_PARSER = StrictJSONParser()


def retrieve(request: HttpRequest, file_id: str) -> Answer | None:
    """``GET /v1/files/<id>``: the key and the file in one statement."""
    token = well_formed_bearer(request)
    if token is None:
        return None
    found = selectors.file_get_with_key(raw_key=token, file_id=file_id)
    if found is None or found.api_key is None or found.file is None:
        return None  # 401 or 404: the DRF view answers
    admit(request, found.api_key)
    return Answer({"data": file_json(found.file)})


def upload(request: HttpRequest) -> Answer | None:
    """``POST /v1/files/upload`` without an Idempotency-Key, with a JSON body.

    A key this process has resolved before is not looked up again: the upload's one
    statement checks that it is still active (a revoked key writes nothing, and the DRF view
    then answers its 401), so the whole request is one round trip to PostgreSQL."""
    if (
        "HTTP_IDEMPOTENCY_KEY" in request.META
        or request.content_type != "application/json"
        or not _has_body(request)
    ):
        return None
    token = well_formed_bearer(request)
    if token is None:
        return None
    known = api_key_known(raw_key=token)
    if known is None:
        return _upload_resolved(request, token)
    digest, api_key = known
    try:
        # Before the count: a refused body is the DRF view's to answer, after its own
        # checks of the key and the budget (401, 429, then 400).
        body = validated(UploadRequest, _PARSER.parse(io.BytesIO(request.body)))
    except (ApiError, APIException):  # DRF's ValidationError and ParseError among them
        return None
    try:
        admit(request, api_key)
    except Throttled:
        if api_key_resolve(raw_key=token) is None:
            return None  # revoked meanwhile: the DRF view's 401, not a 429
        raise
    try:
        started = _start(api_key, body, active_key_hash=digest)
    except services.KeyNotActive:
        # Revoked since this process last resolved it: nothing was written; the DRF view
        # answers 401 (this request was counted against the revoked key's budget).
        api_key_forget(digest)
        return None
    return Answer(file_with_upload_json(started.file, started.upload), status=201)


def _upload_resolved(request: HttpRequest, token: str) -> Answer | None:
    """Upload start with its key looked up first (the first request of a key in a process)."""
    api_key = api_key_resolve(raw_key=token)
    if api_key is None:
        return None
    admit(request, api_key)
    # From here on, as the DRF view: the body's refusals are answered (400).
    body = validated(UploadRequest, _PARSER.parse(io.BytesIO(request.body)))
    started = _start(api_key, body, active_key_hash=None)
    return Answer(file_with_upload_json(started.file, started.upload), status=201)


def _start(
    api_key: ApiKey, body: dict[str, Any], *, active_key_hash: str | None
) -> services.StartedUpload:
    return services.file_upload_start(
        tenant=Tenant(project=api_key.project, mode=api_key.environment),
        **upload_arguments(body),
        active_key_hash=active_key_hash,
    )


def _has_body(request: HttpRequest) -> bool:
    # RequestLimitsMiddleware has refused a Content-Length that is not a number.
    return int(request.META.get("CONTENT_LENGTH") or 0) > 0
