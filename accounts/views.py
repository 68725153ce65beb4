from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.context import api_key_of
from storage_service.timefmt import iso


class MeView(APIView):
    def get(self, request: Request) -> Response:
        api_key = api_key_of(request)
        project = api_key.project
        organization = project.organization
        return Response(
            {
                "data": {
                    "project": {
                        "id": project.id,
                        "name": project.name,
                        "createdAt": iso(project.created_at),
                    },
                    "organization": {"id": organization.id, "name": organization.name},
                    "apiKey": {
                        "id": api_key.id,
                        "prefix": api_key.prefix,
                        "environment": api_key.environment,
                        "createdAt": iso(api_key.created_at),
                    },
                    "environment": api_key.environment,
                }
            }
        )
