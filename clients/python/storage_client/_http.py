"""HTTP to the API: authentication, retries, and errors as exceptions.

Two connection pools, never mixed: the API's, which carries the bearer key, and the store's
(presigned URLs carry their own signature; the key must never reach the store).
"""

from __future__ import annotations

import email.utils
import platform
import random
import time
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from storage_client._version import __version__
from storage_client.errors import (
    NetworkError,
    RateLimitedError,
    ServiceUnavailableError,
    StorageError,
    error_class,
)

USER_AGENT = (
    f"storage-service-client/{__version__} python/{platform.python_version()} "
    f"httpx/{httpx.__version__}"
)
# Failures where the request never reached the server: safe to retry for any method.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def backoff(attempt: int, *, base: float = 0.5, cap: float = 8.0) -> float:
    """Exponential backoff with jitter: about 0.5, 1, 2, 4, 8 s (each 50-100% of that)."""
    return min(cap, base * 2.0**attempt) * random.uniform(0.5, 1.0)


def retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (a number or an HTTP date), if the response has one."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def api_error(response: httpx.Response) -> StorageError:
    """The exception for an error response (its class by status; code and message from the
    body ``{"error": {"code", "message", "details"}}``)."""
    code, message = "", response.reason_phrase or f"HTTP {response.status_code}"
    details: dict[str, Any] = {}
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        error = body["error"]
        code = str(error.get("code") or "")
        message = str(error.get("message") or message)
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
    exc = error_class(response.status_code)(
        message,
        status=response.status_code,
        code=code,
        details=details,
        request_id=response.headers.get("X-Request-Id"),
    )
    if isinstance(exc, (RateLimitedError, ServiceUnavailableError)):
        exc.retry_after = retry_after(response)
    return exc


class Api:
    """Requests to the API under ``<base_url>/v1``."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str,
        timeout: float,
        max_retries: int,
        max_retry_wait: float,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.http = httpx.Client(
            base_url=base_url.rstrip("/") + "/v1",
            headers={"Authorization": f"Bearer {api_key}", "User-Agent": USER_AGENT},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        self.http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
    ) -> Any:
        """Send, retrying 429 and 503 (after ``Retry-After``) and lost connections; return
        the decoded JSON body, or raise the error's exception.

        ``idempotent`` (default: GET and HEAD only) says whether a request that may have
        reached the server can be sent again: creations with an Idempotency-Key can.
        """
        if idempotent is None:
            idempotent = method in ("GET", "HEAD")
        query = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        while True:
            try:
                response = self.http.request(method, path, json=json, params=query, headers=headers)
            except httpx.TransportError as exc:
                if attempt < self.max_retries and (idempotent or isinstance(exc, NOT_SENT)):
                    time.sleep(backoff(attempt))
                    attempt += 1
                    continue
                raise NetworkError(f"{method} {path}: {describe(exc)}") from exc
            if response.status_code in (429, 503) and attempt < self.max_retries:
                wait = retry_after(response)
                wait = backoff(attempt) if wait is None else wait
                if wait <= self.max_retry_wait:
                    time.sleep(wait)
                    attempt += 1
                    continue
            if response.is_error:
                raise api_error(response)
            if not response.content:
                return None
            return response.json()

    def pages(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a list, following ``pagination.nextCursor`` page after page."""
        query = dict(params or {})
        while True:
            body = self.request("GET", path, params=query)
            yield from body["data"]
            pagination = body.get("pagination") or {}
            cursor = pagination.get("nextCursor")
            if not pagination.get("hasMore") or not cursor:
                return
            query["cursor"] = cursor


def store_client(timeout: float, connections: int) -> httpx.Client:
    """The pool for presigned URLs: no key, no base URL, enough connections for the parts."""
    return httpx.Client(
        headers={"User-Agent": USER_AGENT},
        timeout=httpx.Timeout(timeout, connect=min(timeout, 30.0)),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
    )


def describe(exc: BaseException) -> str:
    """A one-line description of a network failure."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def split_etag(value: str) -> str:
    return value.strip().strip('"')
