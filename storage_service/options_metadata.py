"""What ``OPTIONS`` answers on every API route."""

from __future__ import annotations

from typing import Any

from rest_framework.metadata import SimpleMetadata
from rest_framework.request import Request


class OptionsMetadata(SimpleMetadata):
    """The view's name, description and media types, without DRF's form of each action's
    fields: the request bodies are described by the OpenAPI document (/v1/openapi.json), and
    the views read their bodies with request serializers, not a ``serializer_class``."""

    def determine_metadata(self, request: Request, view: Any) -> dict[str, Any]:
        return {
            "name": view.get_view_name(),
            "description": view.get_view_description(),
            "renders": [renderer.media_type for renderer in view.renderer_classes],
            "parses": [parser.media_type for parser in view.parser_classes],
        }
