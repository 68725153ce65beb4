"""drf-spectacular's generator (SPECTACULAR_SETTINGS' DEFAULT_SCHEMA_CLASS) and the
postprocessing hook that adds the probes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema

from storage_service import errors
from storage_service.openapi.extensions import UPLOAD_TOKEN
from storage_service.openapi.responses import (
    ALWAYS,
    ERROR_HEADERS,
    JSON,
    REQUEST_ID_HEADER,
    SCOPE_EXTENSION,
    ErrorResponse,
    Links,
    Shape,
    error_responses,
)
from storage_service.openapi.typeschema import Schema, shape_name
from storage_service.serializers import StrictSerializer


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's generator, through its public override points: every operation
    declares its body and answers with ``@extend_schema``, and ``get_operation`` adds what
    every operation of its kind shares (the request id header, the shared errors, a required
    body) and the links of its answers."""

    def get_paginated_name(self, serializer_name: str) -> str:
        # "FilePaged": as a shape's component is named (shape_name). Only a view with a
        # paginator (DRF's GenericAPIView.paginator) has its answers paginated.
        view: Any = self.view
        return serializer_name + shape_name(view.paginator.envelope)

    def get_operation_id(self) -> str:
        # "<tag>_<handler>" (files_upload, files_replace_complete, identity_get): stable, unique
        # per route and method, and readable in generated clients.
        # A tag of two words (upload-tokens) gives upload_tokens_create: an identifier.
        handler = getattr(self.view, "action", None) or self.method.lower()
        return f"{self.get_tags()[0].replace('-', '_')}_{handler}"

    def get_request_serializer(self) -> Any:
        # Nothing is guessed from the view (our views have no serializer_class): a body is
        # what @extend_schema(request=...) declares, which replaces this method.
        return None

    def get_response_serializers(self) -> Any:
        # As get_request_serializer: the answers are @extend_schema(responses=...)'s.
        return None

    def get_operation(
        self, path: str, path_regex: str, path_prefix: str, method: str, registry: Any
    ) -> Schema | None:
        operation: Schema | None = super().get_operation(
            path, path_regex, path_prefix, method, registry
        )
        if operation is None:
            return None
        body = operation.get("requestBody")
        cls = self.request_serializer_class()
        if body is not None and cls is not None and cls.body_required():
            # A body of required fields, or one that must name at least one field: an absent
            # body is refused, so the document says the body is required.
            body["required"] = True
        if self.method == "GET" and getattr(self.view, "action", None) == "list":
            paginator = getattr(self.view, "paginator", None)
            if paginator is not None:
                # The component the paginator's envelope refers to (shape_ref)
                pagination: Any = Shape(paginator.pagination_shape)  # ShapeExtension's
                self.resolve_serializer(pagination, "response")
        declared = self.get_response_serializers()
        if not isinstance(declared, dict):
            return operation
        responses: Schema = operation["responses"]
        for code, response in declared.items():
            answer = responses[str(code)]
            status_headers = (
                ERROR_HEADERS.get(response.status, {})
                if isinstance(response, ErrorResponse)
                else {}
            )
            answer["headers"] = {**REQUEST_ID_HEADER, **status_headers, **answer.get("headers", {})}
            if isinstance(response, Links) and response.targets:
                answer["links"] = response.as_openapi()
        for error in self.shared_errors(operation, declared):
            responses[str(error.status)] = {
                "description": error.description,
                "headers": {**REQUEST_ID_HEADER, **ERROR_HEADERS.get(error.status, {})},
                "content": {JSON: {"schema": self.error_ref()}},
            }
        operation["responses"] = dict(sorted(responses.items(), key=lambda item: int(item[0])))
        return operation

    def request_serializer_class(self) -> type[StrictSerializer] | None:
        found = self.get_request_serializer()
        cls = found if isinstance(found, type) else type(found)
        return cls if issubclass(cls, StrictSerializer) else None

    def shared_errors(self, operation: Schema, declared: dict[Any, Any]) -> list[ErrorResponse]:
        """The errors every operation of its kind shares: 401/429/503 where a key is needed,
        400 where a body or a query is read, 413 (``PAYLOAD_TOO_LARGE``) and 415 where a body
        is, beside the operation's own."""
        codes = [
            code for r in declared.values() if isinstance(r, ErrorResponse) for code in r.codes
        ]
        has_body = self.method in ("POST", "PUT", "PATCH") and bool(self.get_request_serializer())
        has_query = any(p.get("in") == "query" for p in operation.get("parameters", []))
        if has_body or has_query:
            codes.append("VALIDATION_ERROR")
        if has_body:  # storage_service.middleware.RequestLimitsMiddleware
            codes.append("PAYLOAD_TOO_LARGE")
        if self.get_auth():
            codes.extend(ALWAYS)
        if self.required_scope():
            codes.append("INSUFFICIENT_SCOPE")
        shared = error_responses(*codes)
        if has_body:
            shared.append(ErrorResponse(415, ("VALIDATION_ERROR",)))
        return shared

    def error_ref(self) -> Schema:
        error: Any = Shape(errors.ErrorJson)  # resolved by ShapeExtension, like a serializer
        return dict(self.resolve_serializer(error, "response").ref)

    def required_scope(self) -> str | None:
        return (self.get_extensions() or {}).get(SCOPE_EXTENSION)

    def get_auth(self) -> list[dict[str, list[str]]]:
        """The key scheme, with the operation's scope as the requirement's role (OpenAPI 3.1
        allows roles for any scheme), as well as in ``x-required-scope``."""
        auth: list[dict[str, list[str]]] = super().get_auth()
        if not (self.get_extensions() or {}).get(errors.UPLOAD_TOKEN_EXTENSION):
            # An upload token is accepted only where the operation says so.
            auth = [requirement for requirement in auth if UPLOAD_TOKEN not in requirement]
        needed = self.required_scope()
        if not needed:
            return auth
        # Scopes are a key's; a token is bounded by its own fields instead.
        return [
            {name: [] if name == UPLOAD_TOKEN else [needed] for name in requirement}
            for requirement in auth
        ]


def add_unversioned_paths(result: Schema, generator: Any, request: Any, public: bool) -> Schema:
    """drf-spectacular's postprocessing hook: the probes, which are plain Django views it
    can't see."""
    error = {"$ref": "#/components/schemas/Error"}
    probe = {
        "security": [],
        "tags": ["operations"],
        "responses": {
            "200": {
                "description": "Up (and, for /readyz, every dependency answers).",
                "headers": REQUEST_ID_HEADER,
                "content": {JSON: {"schema": {"type": "object"}}},
            },
            "503": {
                "description": "A dependency did not answer (`SERVICE_UNAVAILABLE`).",
                "headers": REQUEST_ID_HEADER,
                "content": {JSON: {"schema": error}},
            },
        },
    }
    result["paths"]["/healthz"] = {
        "get": {**probe, "operationId": "healthz", "summary": "Liveness"}
    }
    result["paths"]["/readyz"] = {"get": {**probe, "operationId": "readyz", "summary": "Readiness"}}
    # drf-spectacular builds the components before it reads the webhooks section, so the
    # shapes only a webhook uses (the event envelope) would be referenced but missing.
    for name, schema in generator.registry.build({}).get("schemas", {}).items():
        result["components"]["schemas"].setdefault(name, schema)
    return result
