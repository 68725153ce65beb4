"""Test actors and builders: projects with keys, files in every state, sample bytes."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from PIL import Image
from rest_framework.test import APIClient

from accounts.models import ApiKey, Project
from accounts.services import IssuedKey, api_key_issue, project_create
from accounts.tenancy import Tenant


@dataclass
class Actor:
    """A project and a client that authenticates as one of its keys."""

    project: Project
    key: IssuedKey
    client: APIClient

    @property
    def tenant(self) -> Tenant:
        """The tenant this actor's key reaches: its project, in its key's mode."""
        return Tenant(project=self.project, mode=self.key.api_key.environment)

    def post(self, url: str, body: Any = None, **headers: Any) -> Any:
        return self.client.post(url, body, format="json", headers=headers or None)

    def get(self, url: str, params: dict[str, Any] | None = None) -> Any:
        return self.client.get(url, params or {})

    def patch(self, url: str, body: Any) -> Any:
        return self.client.patch(url, body, format="json")

    def delete(self, url: str) -> Any:
        return self.client.delete(url)


def make_actor(name: str, *, organization: str | None = None, environment: str = "test") -> Actor:
    project = project_create(name=name, organization_name=organization)
    issued = api_key_issue(project=project, environment=environment)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
    return Actor(project=project, key=issued, client=client)


def key_for(project: Project, environment: str = ApiKey.Environment.TEST) -> IssuedKey:
    return api_key_issue(project=project, environment=environment)


def image_bytes(fmt: str = "PNG", size: tuple[int, int] = (8, 8)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 40, 40)).save(buffer, fmt)
    return buffer.getvalue()


def png_bytes() -> bytes:
    return image_bytes("PNG")


def jpeg_bytes() -> bytes:
    return image_bytes("JPEG")


def pdf_bytes() -> bytes:
    return image_bytes("PDF")


def upload_body(
    data: bytes, *, filename: str = "photo.png", content_type: str = "image/png", **extra: Any
) -> dict[str, Any]:
    return {"filename": filename, "contentType": content_type, "size": len(data), **extra}
