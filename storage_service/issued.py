"""The endpoints of a resource a project issues and revokes, whose secret is shown once:
upload tokens (uploads/tokenviews.py), delivery keys (delivery/views.py) and webhook endpoints
(webhooks/views.py). They answer in one set of shapes:

- create: 201 ``{"data": {<resource>: <object>, <secret>: "…"}}``, the only answer that
  holds the secret (a webhook's rotation answers the same, with 200);
- list: ``{"data": [<object>, …]}``, or a cursor page for a resource with no cap on its count;
- retrieve: ``{"data": <object>}``;
- revoke: ``{"data": {"id": "…", "revoked": true}}`` (a webhook endpoint is deleted instead:
  ``"deleted": true``).

``IssuedResourceViews`` writes those answers and ``IssuedResourceSchema`` the parts of their
``@extend_schema`` that the three share (tag, scope, id parameter, not-found code). A viewset
keeps its own actions, each with the HTTP parsing and the service call it needs and its own
``@extend_schema``, and answers through these, so the three cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from storage_service.openapi import errors_of
from storage_service.operations import Decorator, ResourceSchema, declared

ResourceT = TypeVar("ResourceT")


# A viewset mixin: the answers of a resource issued with a secret shown once. No docstring:
# drf-spectacular describes an operation with no description of its own by its view class's
# docstring, inherited ones included, so one here would be every such operation's.
class IssuedResourceViews(Generic[ResourceT]):
    resource_field: ClassVar[str]  # the object's name beside the secret: "uploadToken"
    secret_field: ClassVar[str]  # the secret's: "token", "secret"
    ended_field: ClassVar[str] = "revoked"  # what revoking it answers true

    def render(self, resource: ResourceT) -> Any:
        """The resource's object, as every read shows it (never the secret)."""
        raise NotImplementedError

    def issued(self, resource: ResourceT, secret: str, *, status: int = 201) -> Response:
        return Response(
            {"data": {self.resource_field: self.render(resource), self.secret_field: secret}},
            status=status,
        )

    def listed(self, resources: Iterable[ResourceT]) -> Response:
        return Response({"data": [self.render(resource) for resource in resources]})

    def paged(self, queryset: QuerySet[Any]) -> Response:
        """A cursor page of ``queryset``, filtered: for a GenericViewSet with
        ``pagination_class`` and ``filterset_class``."""
        page = self.paginate_queryset(self.filter_queryset(queryset))  # type: ignore[attr-defined]
        assert page is not None  # pagination_class is set
        rendered = [self.render(resource) for resource in page]
        response: Response = self.get_paginated_response(rendered)  # type: ignore[attr-defined]
        return response

    def found(self, resource: ResourceT) -> Response:
        return Response({"data": self.render(resource)})

    def ended(self, resource_id: str) -> Response:
        return Response({"data": {"id": resource_id, self.ended_field: True}})


@dataclass(frozen=True)
class IssuedResourceSchema(ResourceSchema):
    """The shared parts of the four operations' ``@extend_schema``; each call takes what is
    the operation's own (its summary, description, request and response types)."""

    def create(
        self, *, summary: str, request: Any, created: Any, errors: Sequence[str] = (), **more: Any
    ) -> Decorator:
        return extend_schema(
            tags=[self.tag],
            extensions=self.write,
            summary=summary,
            request=request,
            responses={201: declared(created), **errors_of(*errors)},
            **more,
        )

    def list(self, *, summary: str, listed: Any) -> Decorator:
        return extend_schema(
            tags=[self.tag],
            extensions=self.read,
            summary=summary,
            responses={200: declared(listed)},
        )

    def retrieve(self, *, summary: str, found: Any) -> Decorator:
        return self.on_one(self.read, summary=summary, answer=found)

    def revoke(self, *, summary: str, ended: Any, **more: Any) -> Decorator:
        return self.on_one(self.write, summary=summary, answer=ended, **more)
