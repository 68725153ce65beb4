"""The API answers JSON, whatever the request's ``Accept`` header asks for.

JSON is the one format the API has (the document lists no other), so DRF's negotiation of
``Accept`` could only refuse: ``Accept: text/html`` was a 406 that the document does not list,
and it came before authentication, so it even hid a 401. DRF documents this class for an API
with one renderer. The body's ``Content-Type`` is still checked (415 without JSON).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class IgnoreClientContentNegotiation(DefaultContentNegotiation):
    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: Any = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type
