"""The store `make test` (and `make run`) starts lets browsers on the configured origins
(SERVICE_STORE_CORS_ORIGINS; by default the browser-upload example's) PUT and GET presigned
URLs with the signed headers, and refuses other origins."""

from __future__ import annotations

import requests

from storage_service import objectstore

ALLOWED = "http://localhost:3000"


def preflight(origin: str) -> requests.Response:
    """What a browser asks before PUTting to a presigned URL the service hands out."""
    upload = objectstore.presign_put(
        key="cors/any", content_type="text/plain", size=1, expires_in=60
    )
    return requests.options(
        upload.url,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "content-type,if-none-match",
        },
        timeout=10,
    )


def test_the_store_accepts_a_browser_from_an_allowed_origin() -> None:
    answer = preflight(ALLOWED)
    assert answer.status_code == 200
    assert answer.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert "PUT" in answer.headers["Access-Control-Allow-Methods"]
    allowed_headers = answer.headers["Access-Control-Allow-Headers"].lower()
    assert "content-type" in allowed_headers and "if-none-match" in allowed_headers
    assert "etag" in answer.headers["Access-Control-Expose-Headers"].lower()


def test_the_store_refuses_a_browser_from_another_origin() -> None:
    answer = preflight("https://elsewhere.example")
    assert "Access-Control-Allow-Origin" not in answer.headers
