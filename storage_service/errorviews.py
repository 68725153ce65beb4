"""Django's own error views (handler400/403/404/500 in the URLconf, CSRF_FAILURE_VIEW): errors
raised outside DRF's views answer the same error body as those DRF's views raise."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from storage_service.errors import (
    REQUEST_LIMIT_ERRORS,
    error_body,
    internal_error_body,
    request_limit_refusal,
)


def json_error(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    return JsonResponse(error_body(code, message), status=status)


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if isinstance(exception, REQUEST_LIMIT_ERRORS):
        refusal = request_limit_refusal(exception)
        return JsonResponse(refusal.body(), status=refusal.status)
    return json_error(request, 400, "VALIDATION_ERROR", "Bad request.")


def handler403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return json_error(request, 403, "FORBIDDEN", "Permission denied.")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return json_error(request, 403, "FORBIDDEN", "CSRF verification failed.")


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return json_error(request, 404, "NOT_FOUND", "No such route.")


def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """The URLconfs' last pattern: any other path is the JSON 404, in every profile (DEBUG's
    HTML page included)."""
    return handler404(request)


def handler500(request: HttpRequest) -> HttpResponse:
    request_id = str(getattr(request, "request_id", "-"))
    return JsonResponse(internal_error_body(request_id), status=500)
