"""The OpenAPI document: components written by hand, attached to views with ``extend_schema``.

The views build their JSON by hand (``file_json`` and friends) rather than through output
serializers, so the response shapes are written here once, as JSON Schema, next to the error
codes each endpoint can answer. drf-spectacular assembles the paths from the URLconf; the
suite checks that every route is in the document and fuzzes the API against it
(tests/ops/test_openapi.py), which keeps this file honest.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from storage_service import errors

Schema = dict[str, Any]

TIMESTAMP: Schema = {
    "type": "string",
    "format": "date-time",
    "example": "2026-11-22T03:55:04.086Z",
}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: list[str], properties: dict[str, Schema], **extra: Any) -> Schema:
    schema: Schema = {"type": "object", "properties": properties, **extra}
    if required:  # OpenAPI 3.0 forbids an empty "required" list
        schema["required"] = required
    return schema


def data_of(schema: Schema) -> Schema:
    """The contract's ``{ "data": ... }`` envelope."""
    return obj(["data"], {"data": schema})


def page_of(schema: Schema) -> Schema:
    return obj(
        ["data", "pagination"],
        {"data": {"type": "array", "items": schema}, "pagination": ref("Pagination")},
    )


def nullable(schema: Schema) -> Schema:
    return {**schema, "nullable": True}


def public_id(prefix: str) -> Schema:
    return {
        "type": "string",
        "pattern": f"^{prefix}_[0-9a-z]{{26}}$",
        "example": f"{prefix}_01m80p9qhfbw0rf406y6kr13qe",
    }


FILENAME: Schema = {"type": "string", "minLength": 1, "maxLength": 255, "example": "report.pdf"}
PATH: Schema = nullable(
    {
        "type": "string",
        "maxLength": 1024,
        "description": "Folder path: segments joined by '/'; '' or '/' is the root.",
        "example": "invoices/2026",
    }
)
METADATA: Schema = nullable(
    {
        "type": "object",
        "additionalProperties": True,
        "description": "At most 64 keys and 8 KiB serialized.",
    }
)
CONTENT_TYPE: Schema = {"type": "string", "example": "application/pdf", "maxLength": 255}

# --- Components -----------------------------------------------------------------------------

COMPONENTS: dict[str, Schema] = {
    "Error": obj(
        ["error"],
        {
            "error": obj(
                ["code", "message"],
                {
                    "code": {"type": "string", "example": "FILE_NOT_FOUND"},
                    "message": {"type": "string"},
                    "details": {"type": "object", "additionalProperties": True},
                },
            )
        },
    ),
    "Pagination": obj(
        ["hasMore", "nextCursor"],
        {"hasMore": {"type": "boolean"}, "nextCursor": nullable({"type": "string"})},
    ),
    "File": obj(
        [
            "id",
            "filename",
            "path",
            "contentType",
            "size",
            "status",
            "version",
            "metadata",
            "createdAt",
            "updatedAt",
        ],
        {
            "id": public_id("file"),
            "filename": FILENAME,
            "path": PATH,
            "contentType": CONTENT_TYPE,
            "size": {"type": "integer", "minimum": 0},
            "status": {"type": "string", "enum": ["pending", "uploaded", "failed", "deleted"]},
            "version": {"type": "integer", "minimum": 1},
            "metadata": METADATA,
            "checksum": {
                "type": "string",
                "description": "sha256:<hex> where the store gives one, else etag:<etag>.",
            },
            "createdAt": TIMESTAMP,
            "updatedAt": TIMESTAMP,
            "uploadedAt": TIMESTAMP,
            "deletedAt": TIMESTAMP,
        },
    ),
    "UploadDescriptor": obj(
        ["url", "method", "headers", "expiresAt"],
        {
            "url": {"type": "string", "format": "uri", "description": "Presigned PUT URL."},
            "method": {"type": "string", "enum": ["PUT"]},
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Send exactly these headers with the PUT.",
            },
            "expiresAt": TIMESTAMP,
        },
    ),
    "FileWithUpload": obj(
        ["file", "upload"], {"file": ref("File"), "upload": ref("UploadDescriptor")}
    ),
    "DownloadUrl": obj(
        ["url", "expiresAt"],
        {"url": {"type": "string", "format": "uri"}, "expiresAt": TIMESTAMP},
    ),
    "Folder": obj(
        ["path", "name", "parent", "fileCount"],
        {
            "path": {"type": "string"},
            "name": {"type": "string"},
            "parent": nullable({"type": "string"}),
            "fileCount": {"type": "integer", "minimum": 0},
        },
    ),
    "Me": obj(
        ["project", "organization", "apiKey", "environment"],
        {
            "project": obj(
                ["id", "name", "createdAt"],
                {"id": public_id("proj"), "name": {"type": "string"}, "createdAt": TIMESTAMP},
            ),
            "organization": obj(
                ["id", "name"], {"id": public_id("org"), "name": {"type": "string"}}
            ),
            "apiKey": obj(
                ["id", "prefix", "environment", "createdAt"],
                {
                    "id": public_id("key"),
                    "prefix": {"type": "string"},
                    "environment": {"type": "string", "enum": ["test", "live"]},
                    "createdAt": TIMESTAMP,
                },
            ),
            "environment": {"type": "string", "enum": ["test", "live"]},
        },
    ),
}

# --- Request bodies -------------------------------------------------------------------------

JSON = "application/json"


def body(required: list[str], properties: dict[str, Schema], **extra: Any) -> dict[str, Schema]:
    """A JSON request body: unknown fields are refused (400), so the schema says so too."""
    return {JSON: obj(required, properties, additionalProperties=False, **extra)}


EMPTY_BODY = body([], {})


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
# Every authenticated endpoint can answer these.
ALWAYS = ("UNAUTHENTICATED", "RATE_LIMITED", "SERVICE_UNAVAILABLE")
CODE_STATUS.update({"RATE_LIMITED": 429, "UNAUTHENTICATED": 401})


def error_responses(*codes: str) -> dict[int, OpenApiResponse]:
    """The error responses for these codes (plus the ones every endpoint has), by status."""
    by_status: dict[int, list[str]] = {}
    for code in (*codes, *ALWAYS):
        by_status.setdefault(CODE_STATUS[code], []).append(code)
    return {
        status: OpenApiResponse(
            response=ref("Error"), description="Codes: " + ", ".join(f"`{c}`" for c in found)
        )
        for status, found in sorted(by_status.items())
    }


def responses(ok: dict[int, Any], *codes: str) -> dict[int, Any]:
    return {**ok, **error_responses(*codes)}


def describe(view: type, **methods: Any) -> None:
    """Attach ``extend_schema(...)`` results to a view's handler methods by name.

    drf-spectacular's ``extend_schema_view`` only knows the standard viewset actions; our routes
    map HTTP methods to handlers like ``upload`` or ``replace_complete`` explicitly (urls.py), so
    the decorators are applied to those handlers directly.
    """
    for name, decorator in methods.items():
        setattr(view, name, decorator(getattr(view, name)))


def path_id(name: str, prefix: str) -> OpenApiParameter:
    return OpenApiParameter(name, str, OpenApiParameter.PATH, description=f"A `{prefix}_` id.")


FILE_ID = path_id("file_id", "file")
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", str, OpenApiParameter.HEADER, description="1-255 printable ASCII."
)


class AutoSchema(SpectacularAutoSchema):
    def _is_list_view(self, serializer: Any = None) -> bool:
        # Our list endpoints answer an explicit envelope ({"data": [...], "pagination"}), given
        # whole in extend_schema; drf-spectacular must not wrap it in another array.
        return False

    def get_operation_id(self) -> str:
        # "<tag>_<handler>" (files_upload, files_replace_complete, identity_get): stable, unique
        # per route and method, and readable in generated clients.
        handler = getattr(self.view, "action", None) or self.method.lower()
        return f"{self.get_tags()[0]}_{handler}"


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> Schema:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key: `Authorization: Bearer sk_test_…` or `sk_live_…`.",
        }


def add_unversioned_paths(result: Schema, generator: Any, request: Any, public: bool) -> Schema:
    """drf-spectacular's postprocessing hook: the shared components, and the probes, which are
    plain Django views it can't see."""
    result.setdefault("components", {}).setdefault("schemas", {}).update(COMPONENTS)
    probe = {
        "security": [],
        "tags": ["operations"],
        "responses": {
            "200": {"description": "Up (and, for /readyz, every dependency answers)."},
            "503": {
                "description": "A dependency did not answer (`SERVICE_UNAVAILABLE`).",
                "content": {"application/json": {"schema": ref("Error")}},
            },
        },
    }
    result["paths"]["/healthz"] = {
        "get": {**probe, "operationId": "healthz", "summary": "Liveness"}
    }
    result["paths"]["/readyz"] = {"get": {**probe, "operationId": "readyz", "summary": "Readiness"}}
    return result
