"""The routes of a delivery server (``SERVICE_ROLE=delivery``): delivery URLs and the probes,
nothing else. The view is the API's own (storage_service/urls.py routes the same path to it),
so a deployment that serves delivery apart and one that does not answer alike."""

from __future__ import annotations

from django.urls import path, re_path

from delivery.resolve import resolve as delivery_resolve
from storage_service.errorviews import not_found
from storage_service.health import healthz, readyz

DELIVERY_ROUTE = "d/<str:key_id>/<str:file_id>/<str:options>/<str:signature>"

urlpatterns = [
    path(DELIVERY_ROUTE, delivery_resolve),
    path("healthz", healthz),
    path("readyz", readyz),
    # Any other path (the API's among them) is the JSON 404: no CSRF check runs here.
    re_path(r"^(?P<rest>.*)$", not_found),
]

handler400 = "storage_service.errorviews.handler400"
handler403 = "storage_service.errorviews.handler403"
handler404 = "storage_service.errorviews.handler404"
handler500 = "storage_service.errorviews.handler500"
