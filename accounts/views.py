from __future__ import annotations

from typing import cast

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.context import api_key_of, tenant_of
from accounts.limits import limits_of
from accounts.models import ApiKey, ProjectLimits
from accounts.scopes import ScopeName, scope, scopes_of
from accounts.shapes import Environment, MeJson, UsageJson
from accounts.usage import ProjectUsage, project_usage
from storage_service.openapi import Shape
from storage_service.policies import SharedPolicies
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


class MeView(SharedPolicies, APIView):
    @extend_schema(
        tags=["identity"],
        extensions=scope(None),
        summary="The project, organization and key this request authenticates as",
        responses={200: Shape(Data[MeJson])},
    )
    def get(self, request: Request) -> Response:
        answer: Data[MeJson] = {"data": me_json(api_key_of(request))}
        return Response(answer)


def usage_json(usage: ProjectUsage, limits: ProjectLimits | None) -> UsageJson:
    return {
        "storage": {"bytes": usage.storage_bytes, "files": usage.files},
        "bandwidth": {"month": usage.month, "bytes": usage.month_bandwidth_bytes},
        "limits": {
            "maxStorageBytes": limits.max_storage_bytes if limits else None,
            "maxFileSizeBytes": limits.max_file_size_bytes if limits else None,
            "allowedContentTypes": limits.allowed_content_types if limits else None,
        },
    }


class UsageView(SharedPolicies, APIView):
    @extend_schema(
        tags=["usage"],
        extensions=scope(None),
        summary="What this mode stores and downloads, and its limits",
        description="`storage.bytes` is what the store holds for the key's mode: every "
        "version, the trash until it is purged, and variants; a copy shares its source's "
        "bytes. `bandwidth` counts the bytes of download URLs issued this UTC month. A limit "
        "staff have not set is null.",
        responses={200: Shape(Data[UsageJson])},
    )
    def get(self, request: Request) -> Response:
        tenant = tenant_of(request)
        answer: Data[UsageJson] = {"data": usage_json(project_usage(tenant), limits_of(tenant))}
        return Response(answer)
