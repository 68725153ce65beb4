"""The ``/d/…`` route in the OpenAPI document: a plain Django view, which drf-spectacular
cannot see, added by this postprocessing hook (SPECTACULAR_SETTINGS)."""

from __future__ import annotations

from typing import Any

from storage_service.openapi import JSON, REQUEST_ID_HEADER

Schema = dict[str, Any]

_ERROR = {"$ref": "#/components/schemas/Error"}


def _error(description: str) -> Schema:
    return {
        "description": description,
        "headers": REQUEST_ID_HEADER,
        "content": {JSON: {"schema": _ERROR}},
    }


def _segment(name: str, description: str) -> Schema:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string"},
    }


def add_delivery_path(result: Schema, generator: Any, request: Any, public: bool) -> Schema:
    redirect_headers = {
        "Location": {"schema": {"type": "string", "format": "uri"}},
        "Cache-Control": {"schema": {"type": "string"}},
        **REQUEST_ID_HEADER,
    }
    operation = {
        "security": [],
        "tags": ["delivery"],
        "operationId": "delivery_resolve",
        "summary": "Resolve a delivery URL (GET or HEAD, no Authorization): a redirect to the "
        "bytes in the store",
        "description": "Signed by `POST /v1/files/{file_id}/delivery-url` or offline (the "
        'guide\'s "Delivery URLs" section). `302` to a presigned GET of the current version, '
        "the pinned version or the variant, the same `Location` for a whole window; `307` back "
        "to the same URL while an on-demand variant is being made.",
        "parameters": [
            _segment("key_id", "The delivery key's id (`dk_…`)."),
            _segment("file_id", "The file's id (`file_…`)."),
            _segment("options", "`-`, or the signed options (`width=400,format=auto,…`)."),
            _segment("signature", "The URL's HMAC-SHA256, base64url without padding."),
            {
                "name": "waited",
                "in": "query",
                "required": False,
                "description": "Set by the service's own 307: how long the client has waited "
                "for the variant, in milliseconds.",
                "schema": {"type": "integer", "minimum": 0},
            },
        ],
        "responses": {
            "302": {"description": "To the bytes in the store.", "headers": redirect_headers},
            "307": {
                "description": "The variant is being made: ask the Location (the same URL).",
                "headers": redirect_headers,
            },
            "400": _error("The signed transform is invalid (`VALIDATION_ERROR`)."),
            "403": _error(
                "`INVALID_SIGNATURE` (changed, forged, unknown or revoked key) or `URL_EXPIRED`."
            ),
            "404": _error("`FILE_NOT_FOUND`: missing, another tenant's, deleted or purged."),
            "405": _error("Only GET and HEAD (`METHOD_NOT_ALLOWED`)."),
            "409": _error("`VARIANT_LIMIT_REACHED` or `FILE_NOT_UPLOADED`."),
            "422": _error("`VARIANT_FAILED` or `NOT_PROCESSABLE`."),
            "429": _error("`RATE_LIMITED`: the project's resolutions per minute; `Retry-After`."),
            "503": _error("`VARIANT_NOT_READY` (with `Retry-After`) or `SERVICE_UNAVAILABLE`."),
        },
    }
    result["paths"]["/d/{key_id}/{file_id}/{options}/{signature}"] = {"get": operation}
    return result
