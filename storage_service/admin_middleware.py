"""Django's session, authentication and message middleware, for every path but the API's.

The admin and the staff console are the only users of sessions, of ``request.user`` as a
person and of flash messages. An API request (``/v1/…``) carries a bearer key and never a
session: loading an empty session store, a lazy user and two message stores for it, then
asking each whether it needs saving, was work thrown away on every API request. Each class
here is Django's own, whose documented hooks (``process_request``, ``process_response``) do
nothing on an API path and are Django's unchanged on every other. Being subclasses, they
satisfy the admin's system checks (admin.E408-E410) as Django's classes do, and their order in
``MIDDLEWARE`` is Django's.

An API answer therefore never sets or deletes a session cookie, even for a client that sends
a stale ``sessionid``. CSRF's middleware stays Django's own: every view under ``/v1/`` is
CSRF-exempt already (DRF's views and the catch-all 404), which it tells in two attribute
reads, and ``check --deploy`` looks for it by its name.
"""

from __future__ import annotations

from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponse

API_PREFIX = "/v1/"


def is_api_request(request: HttpRequest) -> bool:
    """Whether the request is for the JSON API, which authenticates by bearer key only."""
    return request.path_info.startswith(API_PREFIX)


class AdminSessionMiddleware(SessionMiddleware):
    def process_request(self, request: HttpRequest) -> None:
        if not is_api_request(request):
            super().process_request(request)

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if is_api_request(request):
            return response
        return super().process_response(request, response)


class AdminAuthenticationMiddleware(AuthenticationMiddleware):
    """``request.user`` from the session, outside the API (whose views set it to the key)."""

    def process_request(self, request: HttpRequest) -> None:
        if not is_api_request(request):
            super().process_request(request)


class AdminMessageMiddleware(MessageMiddleware):
    def process_request(self, request: HttpRequest) -> None:
        if not is_api_request(request):
            super().process_request(request)

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if is_api_request(request):
            return response
        return super().process_response(request, response)
