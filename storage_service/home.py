"""The page at ``/``: where a person who opens the service's address in a browser finds the
API's document, the staff console and the health probes. Clients never need it."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from storage_service.errorviews import json_error

LINKS = (
    ("/docs", "API reference", "the OpenAPI document, browsable (Swagger UI)"),
    ("/v1/openapi.json", "OpenAPI document", "JSON, for generating clients"),
    ("/admin/", "Staff console", "projects, keys, files and usage (staff accounts)"),
    ("/healthz", "Liveness", "answers while the process serves requests"),
    ("/readyz", "Readiness", "also checks PostgreSQL, Redis and the object store"),
)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Storage service</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto;
  padding: 0 1rem; color: #1f2933; }}
h1 {{ font-size: 1.5rem; }} dt {{ margin-top: .75rem; }} dd {{ margin: 0; color: #52606d; }}
code {{ background: #f0f4f8; padding: 0 .25rem; }}
</style></head>
<body>
<h1>Storage service</h1>
<p>A JSON API under <code>/v1/</code>: send <code>Authorization: Bearer sk_test_…</code>.
Bytes go straight to the object store through presigned URLs.</p>
<dl>{links}</dl>
</body></html>
"""


def home(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        response = json_error(request, 405, "METHOD_NOT_ALLOWED", "Only GET and HEAD here.")
        response["Allow"] = "GET, HEAD"
        return response
    links = "".join(
        f'<dt><a href="{href}">{title}</a></dt><dd>{what}</dd>' for href, title, what in LINKS
    )
    return HttpResponse(PAGE.format(links=links), content_type="text/html; charset=utf-8")
