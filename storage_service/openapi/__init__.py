"""The OpenAPI document, generated from the definitions the code itself runs on.

- **Responses.** Each object the API answers is a ``TypedDict`` next to the app that owns it
  (``files/shapes.py``...); its rendering function is annotated to return it, so mypy holds
  the code to it. An operation declares it as ``Shape(FileJson)`` (or a generic envelope of
  one, ``Shape(Data[FileJson])``; ``Links`` and the error responses wrap theirs), and
  ``ShapeExtension``, the drf-spectacular extension whose ``target_class`` is ``Shape``, makes
  it a named component, its nested ``TypedDict``s ``$ref``s to theirs. What a type hint
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

The package: ``typeschema`` (type hints to JSON Schema), ``extensions`` (drf-spectacular's
extensions for shapes, strict bodies, filters and authentication), ``responses`` (errors,
headers, links, path ids) and ``autoschema`` (the generator and its postprocessing hook). The
names the apps use are imported here.
"""

from storage_service.openapi.autoschema import AutoSchema, add_unversioned_paths
from storage_service.openapi.extensions import (
    UPLOAD_TOKEN,
    ShapeExtension,
    StrictSerializerExtension,
)
from storage_service.openapi.responses import (
    JSON,
    REQUEST_ID_HEADER,
    ErrorResponse,
    Links,
    Shape,
    each,
    error_responses,
    errors_of,
    path_id,
)
from storage_service.openapi.typeschema import (
    JsonSchema,
    Schema,
    id_pattern,
    id_schema,
    is_shape,
    shape_name,
    shape_ref,
    shape_schema,
    type_schema,
)

__all__ = [
    "JSON",
    "REQUEST_ID_HEADER",
    "UPLOAD_TOKEN",
    "AutoSchema",
    "ErrorResponse",
    "JsonSchema",
    "Links",
    "Schema",
    "Shape",
    "ShapeExtension",
    "StrictSerializerExtension",
    "add_unversioned_paths",
    "each",
    "error_responses",
    "errors_of",
    "id_pattern",
    "id_schema",
    "is_shape",
    "path_id",
    "shape_name",
    "shape_ref",
    "shape_schema",
    "type_schema",
]
