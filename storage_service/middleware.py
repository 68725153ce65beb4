"""Request ids: every response carries ``X-Request-Id`` (the client's, if it sent a sane one)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

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
