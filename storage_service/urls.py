"""Every route of the API, one line each, in the contract's order but for the hottest (first)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from accounts.views import MeView, UsageView
from delivery.resolve import resolve as delivery_resolve
from delivery.views import DeliveryKeyViewSet, DeliveryUrlViewSet
from events.views import EventViewSet
from files.folderviews import FolderOperationViewSet
from files.views import FileBatchViewSet, FileViewSet, FolderViewSet
from jobs.views import JobViewSet
from storage_service.delivery_urls import DELIVERY_ROUTE
from storage_service.errorviews import not_found
from storage_service.health import healthz, readyz
from storage_service.home import home
from uploads.tokenviews import UploadTokenViewSet
from uploads.views import MultipartUploadViewSet
from variants.views import VariantViewSet
from webhooks.views import DeliveryViewSet, WebhookViewSet

files = FileViewSet.as_view
variants = VariantViewSet.as_view
F = "v1/files/<str:file_id>"
uploads = MultipartUploadViewSet.as_view
U = "v1/uploads/multipart/<str:upload_id>"
webhooks = WebhookViewSet.as_view
W = "v1/webhooks/<str:webhook_id>"
keys = DeliveryKeyViewSet.as_view

urlpatterns = [
    # First: a resolution is the most frequent request, and patterns are tried in order.
    path(DELIVERY_ROUTE, delivery_resolve),
    # Then the most requested API routes: one file (after the two literal paths its pattern
    # would also match), then the list.
    path("v1/files/upload", files({"post": "upload"})),
    path("v1/files/batch", FileBatchViewSet.as_view({"post": "batch"})),
    path(F, files({"get": "retrieve", "patch": "partial_update", "delete": "destroy"})),
    path("v1/files", files({"get": "list"})),
    path("v1/me", MeView.as_view()),
    path("v1/usage", UsageView.as_view()),
    path(f"{F}/complete", files({"post": "complete"})),
    path(f"{F}/copy", files({"post": "copy"})),
    path(f"{F}/download-url", files({"post": "download_url"})),
    path(f"{F}/replace", files({"post": "replace"})),
    path(f"{F}/replace/complete", files({"post": "replace_complete"})),
    path(f"{F}/restore", files({"post": "restore"})),
    path("v1/folders", FolderViewSet.as_view({"get": "list"})),
    path("v1/folders/move", FolderOperationViewSet.as_view({"post": "move"})),
    path("v1/folders/delete", FolderOperationViewSet.as_view({"post": "delete"})),
    path("v1/folders/restore", FolderOperationViewSet.as_view({"post": "restore"})),
    path("v1/jobs", JobViewSet.as_view({"get": "list"})),
    path("v1/jobs/<str:job_id>", JobViewSet.as_view({"get": "retrieve"})),
    path("v1/uploads/multipart", uploads({"post": "create"})),
    path(U, uploads({"delete": "destroy"})),
    path(f"{U}/parts", uploads({"get": "list_parts", "post": "sign_parts"})),
    path(f"{U}/complete", uploads({"post": "complete"})),
    path("v1/upload-tokens", UploadTokenViewSet.as_view({"get": "list", "post": "create"})),
    path(
        "v1/upload-tokens/<str:token_id>",
        UploadTokenViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
    ),
    path(f"{F}/transform", variants({"post": "transform"})),
    path(f"{F}/variants", variants({"get": "list"})),
    path(f"{F}/variants/<str:variant_id>/download-url", variants({"post": "download_url"})),
    path("v1/webhooks", webhooks({"get": "list", "post": "create"})),
    path(W, webhooks({"get": "retrieve", "delete": "destroy"})),
    path(f"{W}/deliveries", DeliveryViewSet.as_view({"get": "list"})),
    path(f"{W}/enable", webhooks({"post": "enable"})),
    path(f"{W}/deliveries/<str:delivery_id>/redeliver", webhooks({"post": "redeliver"})),
    path(f"{W}/replay", webhooks({"post": "replay"})),
    path(f"{W}/rotate-secret", webhooks({"post": "rotate_secret"})),
    path("v1/events", EventViewSet.as_view({"get": "list"})),
    path("v1/events/<str:event_id>", EventViewSet.as_view({"get": "retrieve"})),
    path("v1/delivery-keys", keys({"get": "list_keys", "post": "create_key"})),
    path("v1/delivery-keys/<str:delivery_key_id>", keys({"delete": "revoke_key"})),
    path(f"{F}/delivery-url", DeliveryUrlViewSet.as_view({"post": "sign_url"})),
    path("admin/", admin.site.urls),
    path("v1/openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi")),
    path("", home),
    path("healthz", healthz),
    path("readyz", readyz),
]


def bare_json(request: HttpRequest) -> HttpResponse:
    """A fixed JSON body and nothing else: the benchmarks' ceiling for this server."""
    return JsonResponse({"data": {"ok": True}})


if settings.SERVICE_BENCH_ROUTES:
    urlpatterns.append(path("bench/bare", bare_json))


# Last: any other path is the JSON 404, in every profile (DEBUG's HTML page included). Under
# /v1/ it is the API's (bearer keys, no cookies: exempt from CSRF, as every API view is);
# elsewhere CSRF's check comes first, as for the admin.
urlpatterns.append(re_path(r"^(?P<rest>v1/.*)$", csrf_exempt(not_found)))
urlpatterns.append(re_path(r"^(?P<rest>.*)$", not_found))

handler400 = "storage_service.errorviews.handler400"
handler403 = "storage_service.errorviews.handler403"
handler404 = "storage_service.errorviews.handler404"
handler500 = "storage_service.errorviews.handler500"
