"""One error type and one renderer for every error the API answers.

Every error body is ``{"error": {"code", "message", "details"?}}``, whether it comes from our
services, from DRF (parse errors, throttling, auth) or from Django itself (unknown route,
unexpected exception): clients handle exactly one shape.
"""

from __future__ import annotations

import logging
from typing import Any, NotRequired, TypedDict

from django.conf import settings
from django.core.exceptions import (
    PermissionDenied,
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.db import DatabaseError
from django.http import Http404
from django.http.multipartparser import MultiPartParserError
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from storage_service.dberrors import is_unavailable, sqlstate

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


# The OpenAPI extension that names the scope an operation needs (accounts/scopes.py).
SCOPE_EXTENSION = "x-required-scope"


class InsufficientScope(ApiError):
    """A restricted key without the scope the operation declares (``details.requiredScope``)."""

    status, code = 403, "INSUFFICIENT_SCOPE"


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


class EventNotFound(ApiError):
    status, code = 404, "EVENT_NOT_FOUND"


class VariantNotFound(ApiError):
    status, code = 404, "VARIANT_NOT_FOUND"


class FolderNotFound(ApiError):
    """No file (for a restore: no restorable deleted file) at or below the folder's path."""

    status, code = 404, "FOLDER_NOT_FOUND"


class JobNotFound(ApiError):
    status, code = 404, "JOB_NOT_FOUND"


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


class QuotaExceeded(ApiError):
    """The tenant's stored bytes, its pending uploads' reservations and the declared size
    together exceed its ``maxStorageBytes``."""

    status, code = 403, "QUOTA_EXCEEDED"


class ContentTypeNotAllowed(ApiError):
    """The declared (or, at complete, the sniffed) type is not in ``allowedContentTypes``."""

    status, code = 422, "CONTENT_TYPE_NOT_ALLOWED"


class PayloadTooLarge(ApiError):
    """The request body is larger than ``SERVICE_MAX_REQUEST_BODY_BYTES``: refused before it
    is read or parsed, so no client can make a worker buffer or parse megabytes of JSON."""

    status, code = 413, "PAYLOAD_TOO_LARGE"


class NotProcessable(ApiError):
    status, code = 422, "NOT_PROCESSABLE"


class UploadIsMultipart(ApiError):
    """``complete`` on a file whose bytes arrive through a multipart session: that session's
    complete assembles them, and completing the file directly would leave the session open."""

    status, code = 409, "UPLOAD_IS_MULTIPART"


class RateLimited(ApiError):
    """A budget of the tenant is spent (requests per minute, running jobs): retry after
    ``retry_after`` seconds, sent as ``Retry-After``."""

    status, code = 429, "RATE_LIMITED"

    def __init__(self, message: str, *, retry_after: int, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class StorageUnavailable(ApiError):
    status, code = 503, "STORAGE_UNAVAILABLE"


# --- Upload tokens ---------------------------------------------------------------------------
# The OpenAPI extension that marks an operation an upload token may call (accounts/scopes.py).
UPLOAD_TOKEN_EXTENSION = "x-upload-token"


class UploadTokenNotFound(ApiError):
    status, code = 404, "UPLOAD_TOKEN_NOT_FOUND"


class PathNotAllowed(ApiError):
    """An upload token's file outside the token's folder (the folder itself or below it)."""

    status, code = 403, "PATH_NOT_ALLOWED"


class UploadTokenExhausted(ApiError):
    """An upload token has started its ``maxFiles`` files already."""

    status, code = 403, "UPLOAD_TOKEN_EXHAUSTED"


class OriginNotAllowed(ApiError):
    """An upload token sent from an ``Origin`` outside its ``allowedOrigins``."""

    status, code = 403, "ORIGIN_NOT_ALLOWED"


class ServiceUnavailable(ApiError):
    """The database (or another dependency) did not answer: retry shortly, nothing changed."""

    status, code = 503, "SERVICE_UNAVAILABLE"


# --- Delivery to the web (delivery keys, signed delivery URLs) -----------------------------


class DeliveryKeyLimitReached(ApiError):
    """An eleventh active delivery key for one project and mode."""

    status, code = 403, "DELIVERY_KEY_LIMIT_REACHED"


class DeliveryKeyNotFound(ApiError):
    status, code = 404, "DELIVERY_KEY_NOT_FOUND"


class NoDeliveryKey(ApiError):
    """A delivery URL asked for while the tenant has no active delivery key to sign it."""

    status, code = 409, "NO_DELIVERY_KEY"


class InvalidSignature(ApiError):
    """A delivery URL whose signature does not match (changed, forged, unknown or revoked
    key)."""

    status, code = 403, "INVALID_SIGNATURE"


class UrlExpired(ApiError):
    status, code = 403, "URL_EXPIRED"


class VariantFailed(ApiError):
    """A delivery URL's transform whose variant failed: the same parameters fail again."""

    status, code = 422, "VARIANT_FAILED"


# --- Rendering -----------------------------------------------------------------------------

_DRF_CODES: dict[type[Exception], tuple[int, str]] = {
    drf_exceptions.NotAuthenticated: (401, "UNAUTHENTICATED"),
    drf_exceptions.AuthenticationFailed: (401, "UNAUTHENTICATED"),
    drf_exceptions.PermissionDenied: (403, "FORBIDDEN"),
    drf_exceptions.NotFound: (404, "NOT_FOUND"),
    drf_exceptions.MethodNotAllowed: (405, "METHOD_NOT_ALLOWED"),
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
        if isinstance(exc, RateLimited):
            response["Retry-After"] = str(exc.retry_after)
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
    if isinstance(exc, REQUEST_LIMIT_ERRORS):
        refusal = request_limit_refusal(exc)
        return Response(refusal.body(), status=refusal.status)
    if isinstance(exc, DatabaseError) and is_unavailable(exc):
        # PostgreSQL unreachable (restarting, failing over, network, out of connections) or
        # a transaction that lost a race: it was rolled back, so the client may simply retry.
        # Django drops a broken connection at the end of the request and opens a new one on
        # the next, so this heals by itself.
        logger.warning(
            "database unavailable: %s (%s)", type(exc).__name__, sqlstate(exc), exc_info=True
        )
        return database_unavailable()
    # Anything else is a bug (any other database error included: a value the database
    # refused is a check the validators lack, and retrying would never help). It is logged
    # with its traceback and the request id, and answered with that id and without the trace.
    request = context.get("request")
    # DRF's Request answers the attributes of the HttpRequest it wraps (its documented proxy),
    # so the id RequestIdMiddleware set is read the same way from either.
    request_id = str(getattr(request, "request_id", "-"))
    logger.exception(
        "unhandled error in %s (request %s)",
        context.get("view").__class__.__name__,
        request_id,
        extra={"requestId": request_id, "sqlstate": sqlstate(exc)},
    )
    return Response(internal_error_body(request_id), status=500)


def internal_error_body(request_id: str) -> ErrorJson:
    return error_body(
        "INTERNAL_ERROR",
        f"An unexpected error occurred; quote request id {request_id} when reporting it.",
        {"requestId": request_id},
    )


def body_too_large() -> PayloadTooLarge:
    limit = settings.SERVICE_MAX_REQUEST_BODY_BYTES
    return PayloadTooLarge(
        f"The request body is larger than {limit} bytes.", details={"maxBytes": limit}
    )


# --- Django's limits on what it parses ---------------------------------------------------

# What Django raises when it reads a query string or a form body past one of its limits, or
# a multipart body it cannot split (a bad boundary, a part's headers over 1,024 bytes).
REQUEST_LIMIT_ERRORS = (
    TooManyFieldsSent,
    TooManyFilesSent,
    RequestDataTooBig,
    MultiPartParserError,
)


def request_limit_refusal(exc: Exception, part: str | None = None) -> ApiError:
    """One of REQUEST_LIMIT_ERRORS as the error the client sees, naming the limit: 413
    ``PAYLOAD_TOO_LARGE`` for a body over the cap (as the middleware answers before reading
    it), else 400 ``VALIDATION_ERROR``. ``part``: ``query`` or ``body`` when known, the key
    of ``details``."""
    if isinstance(exc, RequestDataTooBig):
        return body_too_large()
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        where = {"query": "The query string has", "body": "The form body has"}.get(
            part or "", "The query string or the form body has"
        )
        return ValidationError(
            f"{where} more than {limit} parameters (DATA_UPLOAD_MAX_NUMBER_FIELDS).",
            details={part or "request": [f"At most {limit} parameters."]},
        )
    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return ValidationError(
            f"The form body has more than {limit} files (DATA_UPLOAD_MAX_NUMBER_FILES).",
            details={"body": [f"At most {limit} files."]},
        )
    return ValidationError(
        "The multipart body cannot be read: it needs a boundary (printable ASCII, at most 201"
        " characters) and each part's headers at most 1,024 bytes.",
        details={"body": [str(exc)]},
    )


def database_unavailable() -> Response:
    error = ServiceUnavailable("The service's database is not answering; retry shortly.")
    response = Response(error.body(), status=error.status)
    response["Retry-After"] = "1"
    return response
