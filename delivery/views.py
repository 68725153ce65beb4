"""HTTP only: delivery keys and the signing of delivery URLs (design section 6). The
resolution of ``/d/…`` URLs is a plain Django view (delivery/resolve.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.context import tenant_of
from accounts.scopes import scope
from delivery import selectors, services
from delivery.models import DeliveryKey
from delivery.serializers import DeliveryUrlRequest, delivery_key_json
from delivery.services import MAX_ACTIVE_KEYS
from delivery.shapes import (
    DeliveryKeyCreatedJson,
    DeliveryKeyJson,
    DeliveryKeyRevokedJson,
    DeliveryUrlJson,
)
from files.openapi import FILE_ID
from storage_service.issued import IssuedResourceSchema, IssuedResourceViews
from storage_service.openapi import Shape, errors_of, path_id
from storage_service.serializers import EmptyRequest, validated
from storage_service.shapes import Data
from storage_service.timefmt import iso

KEYS = IssuedResourceSchema(
    tag="delivery",
    read=scope("files:read"),
    write=scope("files:write"),
    id_parameter=path_id("delivery_key_id", "dk"),
    not_found="DELIVERY_KEY_NOT_FOUND",
)


class DeliveryKeyViewSet(IssuedResourceViews[DeliveryKey], viewsets.ViewSet):
    resource_field, secret_field = "deliveryKey", "secret"

    def render(self, resource: DeliveryKey) -> DeliveryKeyJson:
        return delivery_key_json(resource)

    @KEYS.create(
        summary="Create a delivery key (the answer is the only time its secret is shown)",
        description=f"A project has at most {MAX_ACTIVE_KEYS} active delivery keys in each "
        "mode. The key and its secret sign delivery URLs offline (see the guide).",
        request=EmptyRequest,
        created=Data[DeliveryKeyCreatedJson],
        errors=["DELIVERY_KEY_LIMIT_REACHED"],
    )
    def create_key(self, request: Request) -> Response:
        validated(EmptyRequest, request.data)
        issued = services.delivery_key_create(tenant=tenant_of(request))
        return self.issued(issued.key, issued.secret)

    @KEYS.list(
        summary="The project's delivery keys in this mode, newest first (never their secrets)",
        listed=Data[list[DeliveryKeyJson]],
    )
    def list_keys(self, request: Request) -> Response:
        return self.listed(selectors.delivery_key_list(tenant=tenant_of(request)))

    @KEYS.revoke(
        summary="Revoke a delivery key: every URL signed with it stops resolving at once",
        description="URLs already held by caches (a CDN, a browser) are served from there "
        "until their `max-age` runs out.",
        ended=Data[DeliveryKeyRevokedJson],
    )
    def revoke_key(self, request: Request, delivery_key_id: str) -> Response:
        key = services.delivery_key_revoke(tenant=tenant_of(request), key_id=delivery_key_id)
        return self.ended(key.id)


class DeliveryUrlViewSet(viewsets.ViewSet):
    @extend_schema(
        tags=["delivery"],
        extensions=scope("files:read"),
        summary="Sign a delivery URL of a file (cacheable, for <img src> and links)",
        description="The URL resolves (GET or HEAD, no Authorization) to a 302 to the bytes "
        "in the store: the current version, the pinned `version`, or the `transform`'s "
        "variant, made on first request. `format: auto` picks AVIF, WebP or JPEG (PNG for "
        "images with transparency) by the browser's `Accept`. Signed with `deliveryKeyId`, "
        "else the newest active key. The guide documents the URL's form and signature, so "
        "a server holding the key signs URLs itself with no API call.",
        parameters=[FILE_ID],
        request=DeliveryUrlRequest,
        responses={
            200: Shape(DeliveryUrlJson),
            **errors_of(
                "FILE_NOT_FOUND",
                "DELIVERY_KEY_NOT_FOUND",
                "FILE_NOT_UPLOADED",
                "NO_DELIVERY_KEY",
                "NOT_PROCESSABLE",
            ),
        },
    )
    def sign_url(self, request: Request, file_id: str) -> Response:
        body = validated(DeliveryUrlRequest, request.data)
        transform = body.get("transform")
        signed = services.delivery_url_sign(
            tenant=tenant_of(request),
            file_id=file_id,
            transform=dict(transform) if transform else None,
            version=body.get("version"),
            expires_in=body["expiresInSeconds"],
            key_id=body.get("deliveryKeyId"),
            request_base=request.build_absolute_uri("/"),
        )
        answer: DeliveryUrlJson = {"url": signed.url, "expiresAt": iso(signed.expires_at)}
        return Response(answer)
