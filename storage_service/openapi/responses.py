"""What an operation answers beside its success: its error codes by status (generated from
the ``ApiError`` classes), the headers every answer carries, the links from a creating
operation to the routes that use the ids it returns, and the path ids."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, get_origin

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema_serializer

from storage_service import errors
from storage_service.openapi.typeschema import Schema, id_pattern, is_shape

JSON = "application/json"


class Shape:
    """A response shape (a ``TypedDict``, or a generic envelope of one such as
    ``Data[FileJson]``) as an operation declares it: ``responses={200: Shape(FileJson)}``.

    The wrapper is a real class, so drf-spectacular finds its extension (ShapeExtension) by
    its documented ``target_class``: a shape itself is no subclass of anything of ours (a
    TypedDict's only runtime base is ``dict``, and ``Data[FileJson]`` is not a class at all).
    ``Shape(...)`` of an envelope is an ``EnvelopeShape``.
    """

    def __new__(cls, shape: Any) -> Shape:
        if cls is Shape and get_origin(shape) is not None:
            cls = EnvelopeShape
        return super().__new__(cls)

    def __init__(self, shape: Any) -> None:
        if not is_shape(shape):
            raise TypeError(f"{shape!r} is not a TypedDict or a generic TypedDict")
        self.shape = shape

    def __repr__(self) -> str:
        return f"Shape({self.shape!r})"


# One object: drf-spectacular's list mechanics (an array, a paginator's envelope) are never
# applied to an envelope, even as the answer of a ``list`` action (the webhooks list answers
# ``Data[list[WebhookJson]]``, unpaginated).
@extend_schema_serializer(many=False)
class EnvelopeShape(Shape):
    """A generic envelope's shape (``Data[FileJson]``): one object, never a list's items."""


# --- Errors ---------------------------------------------------------------------------------


def _codes() -> dict[str, int]:
    found: dict[str, int] = {}
    pending: list[type[errors.ApiError]] = [errors.ApiError]
    while pending:
        cls = pending.pop()
        found[cls.code] = cls.status
        pending.extend(cls.__subclasses__())
    return found


CODE_STATUS = _codes()
# DRF's throttling raises its own Throttled, which storage_service.errors renders as this.
CODE_STATUS.update({"RATE_LIMITED": 429})
# The scope a restricted key needs for an operation (accounts/scopes.py declares it on each
# view's @extend_schema: ``extensions=scope("files:read")``; null: any key).
SCOPE_EXTENSION = errors.SCOPE_EXTENSION
# Every authenticated operation can answer these.
ALWAYS = ("UNAUTHENTICATED", "RATE_LIMITED", "SERVICE_UNAVAILABLE")
HEADER_STRING: Schema = {"type": "string"}
REQUEST_ID_HEADER = {
    "X-Request-Id": {
        "description": "The request's id: the client's own `X-Request-Id` if it sent a sane "
        "one, else `req_…`. Quote it when reporting a problem.",
        "schema": HEADER_STRING,
    }
}
ERROR_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"schema": {"type": "string", "enum": ["Bearer"]}}},
    503: {
        "Retry-After": {
            "description": "With `SERVICE_UNAVAILABLE`: seconds to wait before retrying.",
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        }
    },
    429: {
        "Retry-After": {
            "description": "Seconds until the key's next one-minute window.",
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        }
    },
}


class ErrorResponse(OpenApiResponse):
    """One status of an operation's errors, and the codes it may carry: drf-spectacular's
    response of the error envelope, described by its codes."""

    def __init__(self, status: int, codes: tuple[str, ...]) -> None:
        super().__init__(
            response=Shape(errors.ErrorJson),
            description="Codes: " + ", ".join(f"`{c}`" for c in codes),
        )
        self.status = status
        self.codes = codes


def error_responses(*codes: str) -> list[ErrorResponse]:
    by_status: dict[int, list[str]] = {}
    for code in codes:
        found = by_status.setdefault(CODE_STATUS[code], [])
        if code not in found:
            found.append(code)
    return [ErrorResponse(status, tuple(found)) for status, found in sorted(by_status.items())]


# --- Links ----------------------------------------------------------------------------------


class Links(OpenApiResponse):
    """A success response and the operations that use the ids in it.

    ``targets`` maps an operation id to its parameters' runtime expressions, e.g.
    ``{"files_retrieve": {"file_id": "$response.body#/file/id"}}``.
    """

    def __init__(self, response: Any, targets: dict[str, dict[str, str]] | None = None) -> None:
        super().__init__(response=Shape(response) if is_shape(response) else response)
        self.targets = dict(targets or {})

    def as_openapi(self) -> dict[str, Schema]:
        return {
            operation: {"operationId": operation, "parameters": parameters}
            for operation, parameters in self.targets.items()
        }


def each(operations: Iterable[str], **parameters: str) -> dict[str, dict[str, str]]:
    """The same parameters for several target operations."""
    return {operation: dict(parameters) for operation in operations}


def errors_of(*codes: str) -> dict[int, ErrorResponse]:
    """An operation's own error codes by status: ``responses={200: FileData, **errors_of(...)}``.
    The codes every operation of its kind shares are added by ``AutoSchema``."""
    return {error.status: error for error in error_responses(*codes)}


def path_id(name: str, prefix: str) -> OpenApiParameter:
    """A path id. Any string reaches the view (an id of another shape is simply not found,
    404), so the document only describes the ids the service makes."""
    return OpenApiParameter(
        name,
        {"type": "string", "pattern": id_pattern(prefix)},
        OpenApiParameter.PATH,
        description=f"A `{prefix}_` id.",
    )
