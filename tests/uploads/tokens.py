"""Upload tokens as a page uses them: minted by the owner's server, sent by a browser."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from tests.factories import Actor

PAGE = "https://app.example"


class Page:
    """A browser page holding an upload token (and no API key), sending its Origin."""

    def __init__(self, token: str, origin: str | None = PAGE) -> None:
        self.token = token
        self.client = APIClient()
        headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        if origin is not None:
            headers["HTTP_ORIGIN"] = origin
        self.client.credentials(**headers)

    def post(self, url: str, body: Any = None, **headers: Any) -> Any:
        return self.client.post(url, body, format="json", headers=headers or None)

    def get(self, url: str) -> Any:
        return self.client.get(url)

    def delete(self, url: str) -> Any:
        return self.client.delete(url)


def mint(actor: Actor, **bounds: Any) -> dict[str, Any]:
    """``{"uploadToken", "token"}`` of a 201."""
    response = actor.post("/v1/upload-tokens", bounds)
    assert response.status_code == 201, response.json()
    data: dict[str, Any] = response.json()["data"]
    return data


def page_for(actor: Actor, origin: str | None = PAGE, **bounds: Any) -> Page:
    return Page(mint(actor, **bounds)["token"], origin=origin)
