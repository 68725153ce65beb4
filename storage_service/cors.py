"""CORS for upload tokens only: a browser page may call the routes an upload token may call,
with the token; nothing else of the API is reachable from a page.

- A preflight (``OPTIONS`` with ``Access-Control-Request-Method``) to one of those routes,
  from any origin, is answered here: a preflight carries no credential, so the token's
  ``allowedOrigins`` are checked on the request itself (403 ``ORIGIN_NOT_ALLOWED``,
  uploads/auth.py).
- An answer to a request made with an upload token (``Authorization: Bearer ut_…``) and an
  ``Origin`` carries ``Access-Control-Allow-Origin`` for that origin, refusals included, so
  the page can read why it was refused.
- Requests made with API keys never get CORS headers: keys are for servers, and without the
  headers a browser will not hand a page the answer to one.

The routes are listed here by their paths because this runs before URL resolution; the views
declare the same set as ``scope(..., upload_token=True)`` (``x-upload-token`` in the OpenAPI
document), and a test holds the two equal.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

TOKEN_ROUTES = re.compile(
    r"^/v1/(?:files/upload|files/[^/]+/complete|uploads/multipart"
    r"|uploads/multipart/[^/]+(?:/parts|/complete)?)$"
)
ALLOWED_METHODS = "GET, POST, DELETE"
ALLOWED_HEADERS = "authorization, content-type, idempotency-key"
# The headers of ours a page may read: the request id for support, the replay marker, and
# the waits and the scheme of refusals.
EXPOSED_HEADERS = "X-Request-Id, Idempotent-Replayed, Retry-After, WWW-Authenticate"
PREFLIGHT_MAX_AGE = "600"
TOKEN_SCHEME = re.compile(r"^\s*bearer\s+ut_", re.IGNORECASE)


def is_token_request(request: HttpRequest) -> bool:
    return bool(TOKEN_SCHEME.match(request.META.get("HTTP_AUTHORIZATION", "")))


class UploadTokenCorsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        origin = request.META.get("HTTP_ORIGIN")
        if origin is None:
            return self.get_response(request)
        if (
            request.method == "OPTIONS"
            and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in request.META
            and TOKEN_ROUTES.match(request.path_info)
        ):
            preflight = HttpResponse(status=204)
            preflight["Access-Control-Allow-Origin"] = origin
            preflight["Access-Control-Allow-Methods"] = ALLOWED_METHODS
            preflight["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
            preflight["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
            patch_vary_headers(preflight, ("Origin",))
            return preflight
        response = self.get_response(request)
        if is_token_request(request):
            response["Access-Control-Allow-Origin"] = origin
            response["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
            patch_vary_headers(response, ("Origin",))
        return response
