"""Every error the client raises: one base class, one subclass per HTTP status family.

The API answers every error as ``{"error": {"code", "message", "details"}}`` with an
``X-Request-Id`` header; each exception carries those, so a log line can be matched with the
service's own logs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class StorageError(Exception):
    """Base class of every error of the client.

    ``status`` is the HTTP status (None when no answer came: a connection error), ``code``
    the API's error code (``FILE_NOT_FOUND``...), ``details`` the error's details object,
    ``request_id`` the ``X-Request-Id`` of the answer. ``upload_id`` is set on errors that
    interrupt a multipart upload: the session is left active, so
    ``client.uploads.resume(upload_id, source)`` can finish it.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "",
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details: dict[str, Any] = details or {}
        self.request_id = request_id
        self.upload_id: str | None = None

    def __str__(self) -> str:
        text = f"{self.code}: {self.message}" if self.code else self.message
        if self.status is not None:
            text = f"{text} (HTTP {self.status}"
            text += f", request {self.request_id})" if self.request_id else ")"
        if self.upload_id:
            text += f" [upload {self.upload_id} left active: resume it]"
        return text


class ValidationError(StorageError):
    """400: the request was refused as invalid (``details`` names each bad field)."""


class AuthenticationError(StorageError):
    """401: the API key is missing, malformed, unknown or revoked."""


class PermissionDeniedError(StorageError):
    """403: refused (a limit such as WEBHOOK_LIMIT_REACHED, or INSUFFICIENT_SCOPE: a
    restricted key without the scope the operation needs), or a store refused a PUT."""


class NotFoundError(StorageError):
    """404: no such file, upload, variant, webhook or delivery in this project."""


class ConflictError(StorageError):
    """409: the resource is not in a state that allows this (FILE_NOT_PENDING...)."""


class PayloadTooLargeError(StorageError):
    """413: the file is larger than the service accepts."""


class UnprocessableError(StorageError):
    """422: the file cannot be processed (a transform of a non-image)."""


class RateLimitedError(StorageError):
    """429: the key spent its per-minute budget; ``retry_after`` is in seconds."""

    retry_after: float | None = None


class ServiceUnavailableError(StorageError):
    """503: the service or its store did not answer; nothing changed, retry later."""

    retry_after: float | None = None


class ServerError(StorageError):
    """Any other 5xx: a bug of the service (``request_id`` finds it in its logs)."""


class NetworkError(StorageError):
    """No answer: the service or the store could not be reached, or the connection broke."""


class TransferError(StorageError):
    """Bytes could not be sent to or read from the store (after every retry), or the source
    file could not be read."""


class VariantFailedError(StorageError):
    """A variant waited for ended ``failed``; ``variant`` is it, with its failure reason."""

    variant: Any = None


class WaitTimeoutError(StorageError):
    """A wait (for a variant to be ready, a job to end) ran out of time."""


class JobFailedError(StorageError):
    """A job waited for ended ``failed``; ``job`` is it, with its ``error``."""

    job: Any = None


class ConfigurationError(StorageError):
    """No API key or base URL was given, as arguments or in the environment."""


_BY_STATUS: Mapping[int, type[StorageError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: ValidationError,
    422: UnprocessableError,
    429: RateLimitedError,
    503: ServiceUnavailableError,
}


def error_class(status: int) -> type[StorageError]:
    """The exception class of an HTTP status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return StorageError
