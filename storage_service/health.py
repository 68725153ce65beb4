"""Probes for load balancers and orchestrators. Neither needs an API key.

``/healthz`` answers while the process can serve a request at all (liveness: restart me if
this fails). ``/readyz`` also asks PostgreSQL, Redis and the object store, each with a short
timeout (readiness: send me traffic only if this passes). Readiness never fails liveness, so a
database outage takes instances out of rotation without restarting them in a loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache, wraps
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from storage_service import objectstore
from storage_service.errors import error_body
from storage_service.errorviews import json_error

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 2.0


def probe(view: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """GET and HEAD only, answering any other method with the JSON 405 (not a CSRF 403)."""

    @csrf_exempt
    @wraps(view)
    def wrapped(request: HttpRequest) -> HttpResponse:
        if request.method not in {"GET", "HEAD"}:
            response = json_error(request, 405, "METHOD_NOT_ALLOWED", "Use GET or HEAD.")
            response["Allow"] = "GET, HEAD"
            return response
        return view(request)

    return wrapped


@probe
def healthz(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"status": "ok"})


def _check_database() -> None:
    # On the request's own thread, so it uses (and tests) the persistent connection the API
    # serves with; a broken one is replaced at the end of the request as usual.
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


@lru_cache(maxsize=1)
def _redis() -> redis.Redis:
    return redis.Redis.from_url(
        settings.REDIS_URL,
        socket_timeout=PROBE_TIMEOUT_SECONDS,
        socket_connect_timeout=PROBE_TIMEOUT_SECONDS,
    )


def _check_redis() -> None:
    _redis().ping()


class _StoreProbe:
    """One HEAD of the bucket, on a daemon thread of its own.

    The store's client waits up to its whole call budget (attempts x (connect + read)), right
    for uploads and wrong for a probe that must answer before the load balancer gives up on
    it. So readiness waits PROBE_TIMEOUT_SECONDS for the HEAD and no longer; a probe that finds
    the previous HEAD still waiting joins it, so a hung store holds one thread, not one per
    probe.
    """

    def __init__(self) -> None:
        self.storage = objectstore.storage()
        self.finished = threading.Event()
        self.error: Exception | None = None
        threading.Thread(target=self._run, name="store-probe", daemon=True).start()

    def _run(self) -> None:
        try:
            objectstore.check()
        except Exception as exc:
            self.error = exc
        finally:
            self.finished.set()


_store_probe: _StoreProbe | None = None
_store_probe_lock = threading.Lock()


def _check_object_store() -> None:
    global _store_probe
    with _store_probe_lock:
        probe = _store_probe
        if probe is None or probe.finished.is_set() or probe.storage is not objectstore.storage():
            probe = _store_probe = _StoreProbe()
    if not probe.finished.wait(PROBE_TIMEOUT_SECONDS):
        raise TimeoutError("The object store did not answer in time.")
    if probe.error is not None:
        raise probe.error


CHECKS: dict[str, Callable[[], None]] = {
    "database": _check_database,
    "redis": _check_redis,
    "objectStore": _check_object_store,
}


def _run(check: Callable[[], None]) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        check()
    except Exception as exc:  # any failure means "not ready"; the reason goes to the log
        logger.warning("readiness check failed: %s", type(exc).__name__, exc_info=True)
        outcome: dict[str, Any] = {"status": "unavailable", "error": type(exc).__name__}
    else:
        outcome = {"status": "ok"}
    outcome["durationMs"] = round((time.perf_counter() - started) * 1000, 1)
    return outcome


@probe
def readyz(request: HttpRequest) -> HttpResponse:
    # The probes run side by side, so a dead dependency costs one timeout, not three.
    others = {name: check for name, check in CHECKS.items() if check is not _check_database}
    with ThreadPoolExecutor(max_workers=len(others)) as pool:
        futures = {name: pool.submit(_run, check) for name, check in others.items()}
        checks = {"database": _run(_check_database)}
        checks.update({name: future.result() for name, future in futures.items()})
    if all(outcome["status"] == "ok" for outcome in checks.values()):
        return JsonResponse({"status": "ok", "checks": checks})
    failing = sorted(name for name, outcome in checks.items() if outcome["status"] != "ok")
    body = error_body(
        "SERVICE_UNAVAILABLE",
        f"Not ready: {', '.join(failing)} did not answer.",
        {"checks": checks},
    )
    return JsonResponse(body, status=503, headers={"Retry-After": "5"})
