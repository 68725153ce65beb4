"""One error type and one renderer for every error the API answers.

Every error body is ``{"error": {"code", "message", "details"?}}``, whether it comes from our
services, from DRF (parse errors, throttling, auth) or from Django itself (unknown route,
unexpected exception): clients handle exactly one shape.
"""

from __future__ import annotations

import logging
from typing import Any, NotRequired, TypedDict

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """An answer the client can act on: an HTTP status and a stable machine-readable code."""

    status = 400
    code = "BAD_REQUEST"

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        status: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code

    def body(self) -> ErrorJson:
        return error_body(self.code, self.message, self.details)


class ErrorDetailJson(TypedDict):
    """``code`` is stable and machine-readable (each operation lists its codes); ``message``
    is for people; ``details``, when present, says more (for ``VALIDATION_ERROR``: each bad
    field, or ``body``, or the header's name, mapped to its messages)."""

    code: str
    message: str
    details: NotRequired[dict[str, Any]]


class ErrorJson(TypedDict):
    """The one error body of every error, from the service or from Django/DRF."""

    error: ErrorDetailJson


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> ErrorJson:
    error: ErrorDetailJson = {"code": code, "message": message}
    if details:
        error["details"] = details
    return {"error": error}


# --- One class per code of the contract (and of the design) -------------------------------


class ValidationError(ApiError):
    status, code = 400, "VALIDATION_ERROR"


class Unauthenticated(ApiError):
    status, code = 401, "UNAUTHENTICATED"


class WebhookLimitReached(ApiError):
    status, code = 403, "WEBHOOK_LIMIT_REACHED"


class NotFound(ApiError):
    status, code = 404, "NOT_FOUND"


class FileNotFound(ApiError):
    status, code = 404, "FILE_NOT_FOUND"


class UploadNotFound(ApiError):
    status, code = 404, "UPLOAD_NOT_FOUND"


class WebhookNotFound(ApiError):
    status, code = 404, "WEBHOOK_NOT_FOUND"


class DeliveryNotFound(ApiError):
    status, code = 404, "DELIVERY_NOT_FOUND"


class VariantNotFound(ApiError):
    status, code = 404, "VARIANT_NOT_FOUND"


class DeliveryAlreadyDelivered(ApiError):
    status, code = 409, "DELIVERY_ALREADY_DELIVERED"


class FileNotPending(ApiError):
    status, code = 409, "FILE_NOT_PENDING"


class FileNotUploaded(ApiError):
    status, code = 409, "FILE_NOT_UPLOADED"


class FileNotDeleted(ApiError):
    status, code = 409, "FILE_NOT_DELETED"


class ReplaceInProgress(ApiError):
    status, code = 409, "REPLACE_IN_PROGRESS"


class NoReplaceInProgress(ApiError):
    status, code = 409, "NO_REPLACE_IN_PROGRESS"


class ObjectNotFound(ApiError):
    status, code = 409, "OBJECT_NOT_FOUND"


class VariantNotReady(ApiError):
    status, code = 409, "VARIANT_NOT_READY"


class VariantLimitReached(ApiError):
    """A new variant on a file version that already has SERVICE_VARIANT_MAX_PER_VERSION."""

    status, code = 409, "VARIANT_LIMIT_REACHED"


class UploadNotActive(ApiError):
    status, code = 409, "UPLOAD_NOT_ACTIVE"


class UploadPartsIncomplete(ApiError):
    status, code = 409, "UPLOAD_PARTS_INCOMPLETE"


class UploadSizeMismatch(ApiError):
    status, code = 409, "UPLOAD_SIZE_MISMATCH"


class ContentTypeMismatch(ApiError):
    status, code = 409, "CONTENT_TYPE_MISMATCH"


class IdempotencyKeyReused(ApiError):
    status, code = 409, "IDEMPOTENCY_KEY_REUSED"


class FileTooLarge(ApiError):
    status, code = 413, "FILE_TOO_LARGE"


class NotProcessable(ApiError):
    status, code = 422, "NOT_PROCESSABLE"


class UploadIsMultipart(ApiError):
    """``complete`` on a file whose bytes arrive through a multipart session: that session's
    complete assembles them, and completing the file directly would leave the session open."""

    status, code = 409, "UPLOAD_IS_MULTIPART"


class StorageUnavailable(ApiError):
    status, code = 503, "STORAGE_UNAVAILABLE"


class ServiceUnavailable(ApiError):
    """The database (or another dependency) did not answer: retry shortly, nothing changed."""

    status, code = 503, "SERVICE_UNAVAILABLE"


# --- Rendering -----------------------------------------------------------------------------

_DRF_CODES: dict[type[Exception], tuple[int, str]] = {
    drf_exceptions.NotAuthenticated: (401, "UNAUTHENTICATED"),
    drf_exceptions.AuthenticationFailed: (401, "UNAUTHENTICATED"),
    drf_exceptions.PermissionDenied: (403, "FORBIDDEN"),
    drf_exceptions.NotFound: (404, "NOT_FOUND"),
    drf_exceptions.MethodNotAllowed: (405, "METHOD_NOT_ALLOWED"),
    drf_exceptions.NotAcceptable: (406, "NOT_ACCEPTABLE"),
    drf_exceptions.UnsupportedMediaType: (415, "VALIDATION_ERROR"),
    drf_exceptions.ParseError: (400, "VALIDATION_ERROR"),
    drf_exceptions.ValidationError: (400, "VALIDATION_ERROR"),
    drf_exceptions.Throttled: (429, "RATE_LIMITED"),
}


def _validation_details(detail: Any) -> dict[str, Any]:
    """DRF's nested error detail as ``{field: [messages]}``; non-field errors under ``body``."""
    if isinstance(detail, dict):
        return {str(key): _flatten_messages(value) for key, value in detail.items()}
    return {"body": _flatten_messages(detail)}


def _flatten_messages(value: Any) -> Any:
    if isinstance(value, list):
        if all(not isinstance(item, dict | list) for item in value):
            return [str(item) for item in value]
        return [_flatten_messages(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _flatten_messages(v) for k, v in value.items()}
    return [str(value)]


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's EXCEPTION_HANDLER: every exception raised in a view becomes the one error body."""
    if isinstance(exc, ApiError):
        response = Response(exc.body(), status=exc.status)
        if isinstance(exc, Unauthenticated):
            response["WWW-Authenticate"] = "Bearer"
        return response
    if isinstance(exc, Http404):
        return Response(error_body("NOT_FOUND", "Not found."), status=404)
    if isinstance(exc, PermissionDenied):
        return Response(error_body("FORBIDDEN", "Permission denied."), status=403)
    for exc_type, (status, code) in _DRF_CODES.items():
        if isinstance(exc, exc_type):
            assert isinstance(exc, drf_exceptions.APIException)
            if isinstance(exc, drf_exceptions.ValidationError):
                body = error_body(code, "The request is invalid.", _validation_details(exc.detail))
            else:
                body = error_body(code, str(exc.detail))
            response = Response(body, status=status)
            if status == 401:
                response["WWW-Authenticate"] = "Bearer"
            wait = getattr(exc, "wait", None)
            if isinstance(exc, drf_exceptions.Throttled) and wait is not None:
                response["Retry-After"] = str(int(wait + 0.999))
            return response
    if isinstance(exc, drf_exceptions.APIException):
        return Response(error_body("ERROR", str(exc.detail)), status=exc.status_code)
    if isinstance(exc, OperationalError | InterfaceError):
        # PostgreSQL unreachable (restarting, failing over, network): the transaction was
        # rolled back, so the client may simply retry. Django drops the broken connection
        # at the end of the request and opens a new one on the next, so this heals by itself.
        logger.warning("database unavailable: %s", type(exc).__name__, exc_info=True)
        return database_unavailable()
    # Anything else is a bug; it is logged with its traceback and answered without one.
    request = context.get("request")
    request_id = getattr(getattr(request, "_request", request), "request_id", "-")
    logger.exception(
        "unhandled error in %s (request %s)", context.get("view").__class__.__name__, request_id
    )
    return Response(error_body("INTERNAL_ERROR", "An unexpected error occurred."), status=500)


# --- Django's own error views (errors raised outside DRF views) ----------------------------


def json_error(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    return JsonResponse(error_body(code, message), status=status)


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return json_error(request, 400, "VALIDATION_ERROR", "Bad request.")


def handler403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return json_error(request, 403, "FORBIDDEN", "Permission denied.")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return json_error(request, 403, "FORBIDDEN", "CSRF verification failed.")


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return json_error(request, 404, "NOT_FOUND", "No such route.")


def database_unavailable() -> Response:
    error = ServiceUnavailable("The service's database is not answering; retry shortly.")
    response = Response(error.body(), status=error.status)
    response["Retry-After"] = "1"
    return response


def handler500(request: HttpRequest) -> HttpResponse:
    return json_error(request, 500, "INTERNAL_ERROR", "An unexpected error occurred.")
