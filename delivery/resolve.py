"""``GET``/``HEAD /d/…``: a plain Django view (no DRF, no API key), since it answers redirects.

Images on demand without holding a request thread through a transform: a request whose
variant is not ready waits a short hold (SERVICE_DELIVERY_TRANSFORM_HOLD_MS, polling the row)
and then answers ``307`` back to the same URL with ``?waited=<ms>``, which browsers, CDNs and
HTTP clients follow by themselves; once the variant is ready, such a request is sent back to
the URL as signed, so the cacheable 302 is kept under the URL the page names. A thread is
thus held at most one hold, however long the transform; after
SERVICE_DELIVERY_TRANSFORM_WAIT_SECONDS in all the answer is 503 ``VARIANT_NOT_READY`` with
``Retry-After``. ``waited`` is the one part of the URL that is not signed: it only says how
long the client has waited, so forging it changes nothing but when the client is told to
retry later.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from delivery.resolution import Redirect, delivery_resolve
from storage_service.dberrors import is_unavailable, sqlstate
from storage_service.errors import ApiError, RateLimited, ServiceUnavailable, error_body

logger = logging.getLogger(__name__)


def _error(error: ApiError) -> HttpResponse:
    response = JsonResponse(error.body(), status=error.status)
    response["Cache-Control"] = "no-store"
    if isinstance(error, RateLimited):
        response["Retry-After"] = str(error.retry_after)
    elif error.status == 503:
        response["Retry-After"] = "1"
    return response


def _waited(request: HttpRequest) -> int | None:
    raw = request.GET.get("waited")
    if raw is None:
        return None
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 9 else 0


@csrf_exempt
def resolve(
    request: HttpRequest, key_id: str, file_id: str, options: str, signature: str
) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        refused = JsonResponse(
            error_body("METHOD_NOT_ALLOWED", "Delivery URLs answer GET and HEAD."), status=405
        )
        refused["Allow"] = "GET, HEAD"
        return refused
    try:
        answer = delivery_resolve(
            key_id=key_id,
            file_id=file_id,
            options_text=options,
            signature=signature,
            # From META: request.headers would build a mapping of every header to read one.
            accept=request.META.get("HTTP_ACCEPT", ""),
            waited_ms=_waited(request),
        )
    except ApiError as error:
        return _error(error)
    except DatabaseError as exc:
        if not is_unavailable(exc):
            raise
        # PostgreSQL away (restarting, failing over): 503 with Retry-After, as the API
        # answers (storage_service.errors.exception_handler), never a 500; a resolution
        # changed nothing.
        logger.warning("database unavailable: %s (%s)", type(exc).__name__, sqlstate(exc))
        return _error(ServiceUnavailable("The service's database is not answering; retry shortly."))
    if isinstance(answer, Redirect):
        response = HttpResponse(status=302)
        response["Location"] = answer.location
        response["Cache-Control"] = f"public, max-age={answer.max_age}"
        if answer.vary_accept:
            response["Vary"] = "Accept"
        return response
    response = HttpResponse(status=307)
    waited = "" if answer.waited_ms is None else f"?waited={answer.waited_ms}"
    response["Location"] = f"{request.path}{waited}"
    response["Cache-Control"] = "no-store"
    return response
