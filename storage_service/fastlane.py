"""Plain Django views in front of DRF's for the hottest requests (issue 14).

A fast lane serves the commonest well-formed request of one endpoint (``GET /v1/files/<id>``,
the list, upload start) without DRF's per-request objects (its Request wrapper, content
negotiation, authentication, permission and throttle instances, Response rendering), which
cost a GET about as much as its SQL. It calls the same functions the DRF view calls (key
resolution, the rate-limit count, the service or selector, the shape, the error handler) and
renders with DRF's own JSONRenderer, so its answer is byte for byte the DRF view's answer
(tests/ops/test_fast_lanes.py sends every kind of request through both and compares).

Anything the lane does not serve is handed, untouched, to the endpoint's DRF view:

- another method (PATCH, DELETE, HEAD, OPTIONS), or an ``Accept`` header that needs
  negotiating (anything but none, ``*/*``, ``application/*`` or ``application/json``);
- whatever the lane's ``serve`` declines by returning None, which it must do before any side
  effect (before counting the request): no key or an unknown one, a resource that is not
  there, a body or query it does not take the short way. The DRF view then answers it in
  full, in its own order (401, then 429, then 400 or 404). (The upload's lane may decline
  after counting, when its statement finds the key revoked: files/fastviews.py.)

Once ``serve`` has counted the request, an exception it raises is answered here through the
same exception handler as DRF's views use (storage_service.errors.exception_handler).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from storage_service.errors import exception_handler

_RENDERER = JSONRenderer()
_MEDIA_TYPE = "application/json"
# Accept values every DRF view here answers with JSON without negotiating further.
_PLAIN_ACCEPT = frozenset({"", "*/*", "application/*", "application/json"})


@dataclass
class Answer:
    """What a lane's ``serve`` answers: the shape's data, a status and extra headers; or,
    instead of ``data``, the ``body`` it has rendered itself (see ``spliced``)."""

    data: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


def spliced(envelope: Mapping[str, Any], texts: list[str]) -> bytes:
    """The JSON of ``envelope`` whose ``data`` holds ``texts`` (each an item's JSON, written
    elsewhere, e.g. by the database), as the renderer would write it: ``envelope`` is
    rendered with ``data`` as that many nulls, which the texts then take the place of."""
    assert next(iter(envelope)) == "data", "data must come first"
    rendered = _RENDERER.render({**envelope, "data": [None] * len(texts)})
    nulls = b'{"data":[' + b",".join(b"null" for _ in texts) + b"]"
    if not rendered.startswith(nulls):
        raise ValueError(f"unexpected rendering {rendered[:100]!r}")
    # What JSONRenderer does to its whole output (JSON that is also valid JavaScript).
    items = ",".join(texts).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return b'{"data":[' + items.encode() + b"]" + rendered[len(nulls) :]


Serve = Callable[..., Answer | None]


def render(data: Any, status: int, allow: str, body: bytes | None = None) -> HttpResponse:
    """The bytes and headers a DRF view of this service answers ``data`` with (or ``body``,
    already rendered)."""
    if body is None:
        body = _RENDERER.render(data)
    response = HttpResponse(body, status=status, content_type=_MEDIA_TYPE)
    response["Allow"] = allow  # DRF's default_response_headers (one renderer: no Vary)
    return response


def _allowed(fallback: Any) -> str:
    """The ``Allow`` header DRF's view sets: its methods, in ``http_method_names`` order."""
    actions = dict(fallback.actions)
    if "get" in actions:
        actions.setdefault("head", actions["get"])
    cls = fallback.cls
    return ", ".join(
        method.upper()
        for method in cls.http_method_names
        if method in actions or (method == "options" and hasattr(cls, "options"))
    )


def fast_lane(fallback: Callable[..., HttpResponse], method: str, serve: Serve) -> Any:
    """A view that lets ``serve`` answer the ``method`` requests it can, and hands every
    other request to ``fallback`` (a DRF ``ViewSet.as_view(...)`` function)."""
    allow = _allowed(fallback)
    view_class = fallback.cls  # type: ignore[attr-defined]

    @csrf_exempt
    def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        if (
            request.method != method
            or request.META.get("HTTP_ACCEPT", "").strip().lower() not in _PLAIN_ACCEPT
        ):
            return fallback(request, **kwargs)
        try:
            answer = serve(request, **kwargs)
        except Exception as exc:
            return _error(exc, request, view_class, allow)
        if answer is None:
            return fallback(request, **kwargs)
        response = render(answer.data, answer.status, allow, answer.body)
        for name, value in answer.headers.items():
            response[name] = value
        return response

    view.cls = view_class  # type: ignore[attr-defined]  # as DRF's views: drf-spectacular reads it
    view.actions = fallback.actions  # type: ignore[attr-defined]
    view.initkwargs = fallback.initkwargs  # type: ignore[attr-defined]
    view.fallback = fallback  # type: ignore[attr-defined]  # tests compare the two answers
    return view


def _error(exc: Exception, request: HttpRequest, view_class: type, allow: str) -> HttpResponse:
    """``exc`` answered as DRF answers an exception raised in a view of ``view_class``."""
    handled: Response | None = exception_handler(exc, {"request": request, "view": view_class()})
    if handled is None:
        raise exc
    response = render(handled.data, handled.status_code, allow)
    for name, value in handled.items():
        if name.lower() != "content-type":
            response[name] = value
    return response
