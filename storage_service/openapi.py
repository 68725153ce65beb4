"""The OpenAPI document, generated from the definitions the code itself runs on.

- **Responses.** Each object the API answers is a ``TypedDict`` next to the app that owns it
  (``files/shapes.py``...); its rendering function is annotated to return it, so mypy holds
  the code to it. ``ShapeExtension`` lets drf-spectacular take such a ``TypedDict`` (or a
  generic envelope of one, ``Data[FileJson]``) wherever it takes a serializer: it becomes a
  named component, and nested ``TypedDict``s become ``$ref``s to theirs. What a type hint
  cannot say (a pattern, a length, a range, a format) rides on the type as
  ``Annotated[str, JsonSchema(pattern=...)]``; a keyword's value may be a callable, read when
  the document is built, so a limit that is a setting is documented from that setting.
- **Requests.** The request serializers are the one input definition. ``StrictSerializer``
  refuses unknown fields, and its component says so (``additionalProperties: false``), along
  with its other whole-body rules; each ``CleanedField``'s schema is its clean function's
  (``storage_service.serializers.json_schema``), the function that enforces it.
- **Errors** are generated from the ``ApiError`` classes: each operation lists its own codes
  by status; the ones every operation shares are added here.
- **Links** from each creating operation to the routes that use the ids it returns let a
  client (and schemathesis's stateful phase) chain the calls.

``@extend_schema`` sits on each view method; nothing attaches schema at start-up.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiFilterExtension,
    OpenApiSerializerExtension,
)
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from storage_service import errors
from storage_service.serializers import CleanedField, StrictSerializer, json_schema

Schema = dict[str, Any]

# --- Constraints carried by the type ---------------------------------------------------------


class JsonSchema:
    """JSON Schema keywords for an ``Annotated`` type, laid over what the type itself says.

    A value may be a zero-argument callable (``lambda: settings.SERVICE_MAX_FILENAME_LENGTH``),
    called when the document is built, so a setting changed at deploy time changes the
    document too.
    """

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords

    def resolve(self) -> Schema:
        return {key: value() if callable(value) else value for key, value in self.keywords.items()}


def id_pattern(prefix: str) -> str:
    """The shape of a public id (storage_service/ids.py): ``<prefix>_`` and 26 base32 chars."""
    return f"^{prefix}_[0-9a-hjkmnp-tv-z]{{26}}$"


def id_schema(prefix: str) -> JsonSchema:
    return JsonSchema(pattern=id_pattern(prefix), example=f"{prefix}_01m80p9qhfbw0rf406y6kr13qe")


# --- Type hints to JSON Schema (OpenAPI 3.1) -------------------------------------------------

_NONE = type(None)
_BASIC: dict[Any, str] = {str: "string", int: "integer", bool: "boolean", float: "number"}


def is_shape(hint: Any) -> bool:
    """A TypedDict class, or a generic TypedDict with its arguments (``Data[FileJson]``)."""
    return typing.is_typeddict(get_origin(hint) or hint)


def shape_name(hint: Any) -> str:
    """The component's name: ``FileJson`` is ``File``; ``Paged[FileJson]`` is ``FilePage``
    (a generic envelope is named after its arguments, then itself)."""
    origin = get_origin(hint)
    if origin is list:
        return shape_name(get_args(hint)[0]) + "List"
    if origin is not None:
        return "".join(shape_name(arg) for arg in get_args(hint)) + shape_name(origin)
    name: str = hint.__name__
    return name.removesuffix("Json")


def shape_ref(shape: Any) -> Schema:
    """A ``$ref`` to a shape's component, for code that has no generator at hand (the
    paginator's response schema); the generator registers the component
    (``AutoSchema.get_operation``)."""
    return {"$ref": f"#/components/schemas/{shape_name(shape)}"}


def nullable(schema: Schema) -> Schema:
    if isinstance(schema.get("type"), str) and "$ref" not in schema:
        result = {**schema, "type": [schema["type"], "null"]}
        if "enum" in schema:
            result["enum"] = [*schema["enum"], None]
        return result
    return {"anyOf": [schema, {"type": "null"}]}


def type_schema(hint: Any, ref: Callable[[Any], Schema]) -> Schema:
    """The JSON Schema of a type hint; ``ref`` turns a shape into a ``$ref`` to its component."""
    origin, args = get_origin(hint), get_args(hint)
    schema: Schema
    if origin is Annotated:
        schema = type_schema(args[0], ref)
        for meta in hint.__metadata__:
            if isinstance(meta, JsonSchema):
                schema = {**schema, **meta.resolve()}
        return schema
    if origin in (NotRequired, Required):
        return type_schema(args[0], ref)
    if is_shape(hint):
        return ref(hint)
    if hint is Any:
        return {}
    if hint is _NONE or hint is None:
        return {"type": "null"}
    if hint in _BASIC:
        return {"type": _BASIC[hint]}
    if origin is Literal:
        schema = {"enum": list(args)}
        kinds = {_BASIC.get(type(arg)) for arg in args}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin in (Union, types.UnionType):
        present = [arg for arg in args if arg is not _NONE]
        schema = (
            type_schema(present[0], ref)
            if len(present) == 1
            else {"anyOf": [type_schema(arg, ref) for arg in present]}
        )
        return nullable(schema) if len(present) < len(args) else schema
    if origin is list:
        return {"type": "array", "items": type_schema(args[0], ref)}
    if origin is dict:
        values = type_schema(args[1], ref)
        return {"type": "object", "additionalProperties": values if values else True}
    raise TypeError(f"No JSON Schema for the type hint {hint!r}")


def _substitute(hint: Any, mapping: dict[Any, Any]) -> Any:
    """``hint`` with a generic shape's type variables replaced by its arguments."""
    if hint in mapping:
        return mapping[hint]
    origin, args = get_origin(hint), get_args(hint)
    if not args or not mapping:
        return hint
    replaced = tuple(_substitute(arg, mapping) for arg in args)
    if origin is Annotated:
        return Annotated[(replaced[0], *hint.__metadata__)]
    if origin in (Union, types.UnionType):
        return Union[replaced]  # noqa: UP007
    return origin[replaced]


def _is_required(hint: Any, total: bool) -> bool:
    # Read from the hints, not __required_keys__: with postponed annotations (PEP 563) Python
    # 3.11 cannot see NotRequired[...] when it builds the class, and calls every key required.
    while get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    if get_origin(hint) is NotRequired:
        return False
    return get_origin(hint) is Required or total


def _doc(text: str) -> str:
    """A docstring as one Markdown paragraph (reST ``code`` becomes `code`)."""
    return " ".join(text.split()).replace("``", "`")


def shape_schema(shape: Any, ref: Callable[[Any], Schema]) -> Schema:
    """A shape's component: every key a property, the required ones required, nothing else
    allowed (the rendering function returns exactly these keys: mypy checks it)."""
    origin = get_origin(shape) or shape
    mapping = dict(zip(getattr(origin, "__parameters__", ()), get_args(shape), strict=False))
    hints = typing.get_type_hints(origin, include_extras=True)
    schema: Schema = {
        "type": "object",
        "properties": {
            name: type_schema(_substitute(hint, mapping), ref) for name, hint in hints.items()
        },
        "additionalProperties": False,
    }
    required = [name for name, hint in hints.items() if _is_required(hint, origin.__total__)]
    if required:
        schema["required"] = required
    if origin.__doc__:
        schema["description"] = _doc(origin.__doc__)
    return schema


class ShapeExtension(OpenApiSerializerExtension):
    """drf-spectacular takes a shape wherever it takes a serializer (Sentry's
    ``inline_sentry_response_serializer``, without the stand-in class).

    The one framework method overridden here that is not a documented override point:
    ``_matches``. An extension's documented ``target_class`` matches a class and its
    subclasses, and a shape is no subclass of anything of ours (a TypedDict's only runtime
    base is ``dict``, and ``Data[FileJson]`` is not a class at all). Without it every answer
    and envelope would have to be re-declared as a serializer class beside its TypedDict,
    the second definition the shapes exist to avoid. tests/ops/test_openapi.py checks that
    drf-spectacular still asks it, so an upgrade that stops doing so fails there, loudly.
    """

    target_class = "storage_service.openapi.ShapeExtension"  # matched by _matches below
    match_subclasses = True

    @classmethod
    def _matches(cls, target: Any) -> bool:
        return is_shape(target)

    def get_name(self, auto_schema: Any, direction: Any) -> str:
        return shape_name(self.target)

    def map_serializer(self, auto_schema: Any, direction: Any) -> Schema:
        def ref(shape: Any) -> Schema:
            return dict(auto_schema.resolve_serializer(shape, direction).ref)

        return shape_schema(self.target, ref)


# --- Requests ------------------------------------------------------------------------------


class FilterSetExtension(OpenApiFilterExtension):
    """A list's filter set: each ``CleanedFilter`` a query parameter documented by its clean
    function (storage_service/filtering.py), with its default and help text."""

    target_class = "storage_service.filtering.FilterBackend"
    priority = 1  # before drf-spectacular's own, which guesses types from the model

    def get_schema_operation_parameters(self, auto_schema: Any, *args: Any, **kwargs: Any) -> Any:
        filterset_class = getattr(auto_schema.view, "filterset_class", None)
        if filterset_class is None:
            return []
        parameters = []
        for name, declared in filterset_class.base_filters.items():
            schema = json_schema(declared.clean)
            if declared.default is not None:
                schema["default"] = declared.default
            # The help text, else the rule's own description, says what the parameter is.
            description = declared.extra.get("help_text") or schema.pop("description", None)
            schema.pop("description", None)
            parameter: Schema = {"in": "query", "name": name, "schema": schema}
            style = schema.pop("x-style", None)
            if style is not None:  # metadata[<key>]=<value>: an object as deepObject
                parameter.update({"style": style, "explode": True})
            if description:
                parameter["description"] = description
            parameters.append(parameter)
        return parameters


def field_schema(field: CleanedField) -> Schema:
    """A body field's schema: its clean function's, with the field's default and help text."""
    schema = json_schema(field.clean)
    if field.default is not serializers.empty and field.default is not None:
        schema["default"] = field.default
    if field.help_text:
        schema["description"] = str(field.help_text)
    return schema


class StrictSerializerExtension(OpenApiSerializerExtension):
    """A strict body's component, stated from its fields' clean functions (every field of a
    ``StrictSerializer`` is a ``CleanedField``): it refuses unknown fields, an empty body
    where fields are needed, and a body without one of ``require_any``."""

    target_class = StrictSerializer
    match_subclasses = True

    def get_name(self, auto_schema: Any, direction: Any) -> str:
        # As drf-spectacular names a serializer's component: its class's name.
        return type(self.target).__name__.removesuffix("Serializer")

    def map_serializer(self, auto_schema: Any, direction: Any) -> Schema:
        serializer = self.target
        fields = serializer.fields
        schema: Schema = {"type": "object"}
        description = inspect.getdoc(type(serializer))
        if description:
            schema["description"] = description.strip()
        if fields:
            schema["properties"] = {
                name: (
                    # A nested body (a transform's options) is its own component.
                    auto_schema.resolve_serializer(f, direction).ref
                    if isinstance(f, serializers.BaseSerializer)
                    else field_schema(f)
                )
                for name, f in fields.items()
            }
        required = sorted(name for name, f in fields.items() if f.required)
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        if serializer.min_fields:
            schema["minProperties"] = serializer.min_fields
        if not serializer.require_any:
            return schema
        # "At least one of width, height": one named variant per field that makes the body
        # valid, each requiring it. (A bare anyOf of {"required": [...]} beside the properties
        # says the same in JSON Schema, but generated clients cannot build a type from it.)
        name = self.get_name(auto_schema, direction)
        variants = []
        for field_name in serializer.require_any:
            variant = {**schema, "required": sorted({*required, field_name})}
            component = ResolvedComponent(
                name=f"{name}With{field_name[0].upper()}{field_name[1:]}",
                type=ResolvedComponent.SCHEMA,
                object=(type(serializer), field_name),
                schema=variant,
            )
            auto_schema.registry.register_on_missing(component)
            variants.append(component.ref)
        return {"anyOf": variants}


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
# The security scheme of upload tokens (ut_…), on the operations marked x-upload-token.
UPLOAD_TOKEN = "uploadToken"
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
        shape: Any = errors.ErrorJson  # a shape, which ShapeExtension resolves
        super().__init__(response=shape, description="Codes: " + ", ".join(f"`{c}`" for c in codes))
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
        super().__init__(response=response)
        self.targets = dict(targets or {})

    def as_openapi(self) -> dict[str, Schema]:
        return {
            operation: {"operationId": operation, "parameters": parameters}
            for operation, parameters in self.targets.items()
        }


def each(operations: Iterable[str], **parameters: str) -> dict[str, dict[str, str]]:
    """The same parameters for several target operations."""
    return {operation: dict(parameters) for operation in operations}


# --- The generator ----------------------------------------------------------------------------

JSON = "application/json"


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
                self.resolve_serializer(paginator.pagination_shape, "response")
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
        shape: Any = errors.ErrorJson  # a shape, which ShapeExtension resolves
        return dict(self.resolve_serializer(shape, "response").ref)

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


def errors_of(*codes: str) -> dict[int, ErrorResponse]:
    """An operation's own error codes by status: ``responses={200: FileData, **errors_of(...)}``.
    The codes every operation of its kind shares are added by ``AutoSchema``."""
    return {error.status: error for error in error_responses(*codes)}


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> Schema:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key: `Authorization: Bearer sk_test_…` or `sk_live_…`; a "
            "restricted key (`rk_test_…`, `rk_live_…`) may call only the operations whose "
            "`x-required-scope` it holds.",
        }


class UploadTokenAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "uploads.auth.UploadTokenAuthentication"
    name = UPLOAD_TOKEN

    def get_security_definition(self, auto_schema: Any) -> Schema:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An upload token, `Authorization: Bearer ut_…` (`POST "
            "/v1/upload-tokens` mints one): only for the operations marked "
            "`x-upload-token`, on the uploads it started, within its bounds.",
        }


def path_id(name: str, prefix: str) -> OpenApiParameter:
    """A path id. Any string reaches the view (an id of another shape is simply not found,
    404), so the document only describes the ids the service makes."""
    return OpenApiParameter(
        name,
        {"type": "string", "pattern": id_pattern(prefix)},
        OpenApiParameter.PATH,
        description=f"A `{prefix}_` id.",
    )


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
