"""DRF's stateless policies made once per process, not once per request.

``APIView`` builds a new instance of every authentication, permission, parser and renderer
class on every request, through the policy instantiation methods DRF documents for
overriding (``get_authenticators``, ``get_permissions``, ``get_parsers``,
``get_renderers``). Ours keep nothing between calls (each reads the request it is given), so
one instance of each serves every request, on every thread: the views below take them from
here. The throttle is not among them: ``RequestRateThrottle`` keeps its request's
``retry_after``, so DRF makes one per request as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.views import APIView


@dataclass(frozen=True)
class Policies:
    authenticators: list[BaseAuthentication]
    # What DRF's permission classes make: BasePermission's, or the composed ones (``A & B``).
    permissions: list[Any]
    parsers: list[BaseParser]
    renderers: list[BaseRenderer]


# A view whose stateless policies (its own classes, DRF's defaults unless it sets them) are
# made once per process. Said here, not in a docstring: drf-spectacular would take that for
# the description of every operation of a view that has none of its own.
class SharedPolicies(APIView):
    @classmethod
    @cache
    def policies(cls) -> Policies:
        return Policies(
            authenticators=[each() for each in cls.authentication_classes],
            permissions=[each() for each in cls.permission_classes],
            parsers=[each() for each in cls.parser_classes],
            renderers=[each() for each in cls.renderer_classes],
        )

    def get_authenticators(self) -> list[BaseAuthentication]:
        return self.policies().authenticators

    def get_permissions(self) -> list[Any]:
        return self.policies().permissions

    def get_parsers(self) -> list[BaseParser]:
        return self.policies().parsers

    def get_renderers(self) -> list[BaseRenderer]:
        return self.policies().renderers
