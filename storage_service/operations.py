"""The parts of ``@extend_schema`` that a resource's operations on one object by its id share:
the tag, the scope's extension, the id parameter and the code of an unknown id.

``ResourceSchema(...).on_one(...)`` takes what is the operation's own (its summary,
description, request, answer and further codes). Files, upload sessions and the resources a
project issues with a secret (storage_service/issued.py) declare theirs this way, so an
operation's entry cannot forget the 404 of its id or the id itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema

from storage_service.openapi import Shape, errors_of, is_shape

Decorator = Callable[[Any], Any]


def declared(answer: Any) -> Any:
    """An answer as ``responses=`` takes it: a bare shape wrapped in ``Shape`` (what
    drf-spectacular's extension matches), a ``Links`` or other response as it is."""
    return Shape(answer) if is_shape(answer) else answer


@dataclass(frozen=True)
class ResourceSchema:
    tag: str
    read: dict[str, Any]  # the ``extensions`` of reads: accounts.scopes.scope("files:read")
    write: dict[str, Any]
    id_parameter: OpenApiParameter
    not_found: str  # the code of an unknown id: "FILE_NOT_FOUND"

    def on_one(
        self,
        extensions: dict[str, Any],
        *,
        summary: str,
        answer: Any,
        status: int = 200,
        errors: Sequence[str] = (),
        **more: Any,
    ) -> Decorator:
        """An operation on one resource by its id (404 with ``not_found`` when unknown)."""
        return extend_schema(
            tags=[self.tag],
            extensions=extensions,
            summary=summary,
            parameters=[self.id_parameter],
            responses={status: declared(answer), **errors_of(self.not_found, *errors)},
            **more,
        )
