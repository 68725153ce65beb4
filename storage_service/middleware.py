"""Request ids (every response carries ``X-Request-Id``: the client's, if it sent a sane
one) and the request's limits (query-string encoding, body size)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, JsonResponse

from storage_service.errors import (
    REQUEST_LIMIT_ERRORS,
    ErrorJson,
    body_too_large,
    error_body,
    request_limit_refusal,
)

_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        # A client-chosen id lets a caller correlate its own logs; anything odd is replaced so
        # that ids stay safe to log and to echo back.
        request_id = (
            incoming if _SAFE_REQUEST_ID.match(incoming) else "req_" + secrets.token_hex(12)
        )
        request.request_id = request_id  # type: ignore[attr-defined]
        response = self.get_response(request)
        response["X-Request-Id"] = request_id
        return response


class RequestLimitsMiddleware:
    """Refuses a query string that is not UTF-8 once percent-decoded (400: Django would turn
    the bad bytes into U+FFFD and answer as if the client had sent that), and a request body
    larger than ``SERVICE_MAX_REQUEST_BODY_BYTES`` with 413
    ``PAYLOAD_TOO_LARGE``, before anything reads or parses it.

    A declared ``Content-Length`` above the limit is refused without reading a byte. A body of
    unknown length (``Transfer-Encoding: chunked``) arrives here with the length that
    ``storage_service.serving.ChunkedBody`` counted while reading it, at most the limit plus
    one piece, so it is refused the same way.

    Then the query string is parsed here first, and so is a form body outside the API (the
    API's views read JSON only and answer a form 415; Django's own views, the admin and CSRF's
    check, read forms): a request past one of Django's limits on them (more than
    ``DATA_UPLOAD_MAX_NUMBER_FIELDS`` parameters or ``DATA_UPLOAD_MAX_NUMBER_FILES`` files, a
    multipart body that cannot be split) is one 400 ``VALIDATION_ERROR`` naming the limit,
    whichever view, filter or middleware would have read it first. Django keeps what it
    parsed, so nothing is parsed twice.
    """

    _FORMS = frozenset({"multipart/form-data", "application/x-www-form-urlencoded"})
    _API = "/v1/"

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if "%" in query:
            try:
                unquote_to_bytes(query.replace("+", " ")).decode("utf-8")
            except UnicodeDecodeError:
                return _refused(
                    400,
                    error_body(
                        "VALIDATION_ERROR",
                        "The query string is not UTF-8.",
                        {"query": ["Percent-encoded bytes must be UTF-8."]},
                    ),
                )
        limit = settings.SERVICE_MAX_REQUEST_BODY_BYTES
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared:
            try:
                length = int(declared)
            except ValueError:
                return _refused(400, error_body("VALIDATION_ERROR", "Invalid Content-Length."))
            if length > limit:
                return _too_large()
        # Reading request.GET and request.POST is what makes Django parse them (once).
        try:
            request.GET.keys()
        except TooManyFieldsSent as exc:
            return _refused(400, request_limit_refusal(exc, "query").body())
        if (
            request.method == "POST"
            and request.content_type in self._FORMS
            and not request.path.startswith(self._API)
        ):
            try:
                request.POST.keys()
            except REQUEST_LIMIT_ERRORS as exc:
                refusal = request_limit_refusal(exc, "body")
                return _refused(refusal.status, refusal.body())
        return self.get_response(request)


def _refused(status: int, body: ErrorJson) -> HttpResponse:
    response = JsonResponse(body, status=status)
    # The unread rest of the body must not be taken for the next request on this connection.
    response["Connection"] = "close"
    return response


def _too_large() -> HttpResponse:
    return _refused(413, body_too_large().body())
