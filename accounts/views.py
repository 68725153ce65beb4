from __future__ import annotations

from typing import cast

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.context import api_key_of
from accounts.models import ApiKey
from accounts.scopes import ScopeName, scope, scopes_of
from accounts.shapes import Environment, MeJson
from storage_service.shapes import Data
from storage_service.timefmt import iso_required


def me_json(api_key: ApiKey) -> MeJson:
    project = api_key.project
    organization = project.organization
    environment = cast(Environment, api_key.environment)
    return {
        "project": {
            "id": project.id,
            "name": project.name,
            "createdAt": iso_required(project.created_at),
        },
        "organization": {"id": organization.id, "name": organization.name},
        "apiKey": {
            "id": api_key.id,
            "prefix": api_key.prefix,
            "environment": environment,
            "scopes": cast(list[ScopeName], scopes_of(api_key)),
            "createdAt": iso_required(api_key.created_at),
        },
        "environment": environment,
    }


class MeView(APIView):
    @extend_schema(
        tags=["identity"],
        extensions=scope(None),
        summary="The project, organization and key this request authenticates as",
        responses={200: Data[MeJson]},
    )
    def get(self, request: Request) -> Response:
        answer: Data[MeJson] = {"data": me_json(api_key_of(request))}
        return Response(answer)
