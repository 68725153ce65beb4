"""drf-spectacular's extensions: how it reads the response shapes, the strict request
bodies, the list filters and the two authentication schemes."""

from __future__ import annotations

import inspect
from typing import Any

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiFilterExtension,
    OpenApiSerializerExtension,
)
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework import serializers

from storage_service.openapi.responses import Shape
from storage_service.openapi.typeschema import Schema, shape_name, shape_schema
from storage_service.serializers import CleanedField, StrictSerializer, json_schema

# The security scheme of upload tokens (ut_…), on the operations marked x-upload-token.
UPLOAD_TOKEN = "uploadToken"

# --- Responses -------------------------------------------------------------------------------


class ShapeExtension(OpenApiSerializerExtension):
    """drf-spectacular takes a shape wherever it takes a serializer (Sentry's
    ``inline_sentry_response_serializer``, without a serializer class beside each TypedDict):
    each ``Shape`` an operation declares becomes a named component, and the shapes nested in
    it ``$ref``s to theirs."""

    target_class = Shape
    match_subclasses = True  # EnvelopeShape

    def get_name(self, auto_schema: Any, direction: Any) -> str:
        return shape_name(self.target.shape)

    def get_identity(self, auto_schema: Any, direction: Any) -> Any:
        # One component per shape, however many Shape(...) name it.
        return self.target.shape

    def map_serializer(self, auto_schema: Any, direction: Any) -> Schema:
        def ref(shape: Any) -> Schema:
            return dict(auto_schema.resolve_serializer(Shape(shape), direction).ref)

        return shape_schema(self.target.shape, ref)


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


# --- Authentication -------------------------------------------------------------------------


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
