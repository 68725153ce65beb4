"""The client: ``Client(api_key, base_url)``, its settings and its resources (files, folders,
jobs, uploads, variants, webhooks, events, upload tokens), each in a module of its own."""

from __future__ import annotations

import os
from typing import Any

import httpx

from storage_client._http import Api, store_client
from storage_client.delivery import DELIVERY_KEY_ENV, DeliveryKey
from storage_client.errors import ConfigurationError
from storage_client.files import Files
from storage_client.folders import Folders
from storage_client.jobs import Jobs
from storage_client.models import Usage
from storage_client.upload_tokens import UploadTokens
from storage_client.uploads import Uploads
from storage_client.variants import Variants
from storage_client.webhooks import Events, Webhooks

MIB = 1024 * 1024
API_KEY_ENV = "STORAGE_API_KEY"
BASE_URL_ENV = "STORAGE_BASE_URL"


class Client:
    """A client of the file storage service.

    ``api_key`` and ``base_url`` default to the environment's ``STORAGE_API_KEY`` and
    ``STORAGE_BASE_URL``. Uploads of ``multipart_threshold`` bytes or more (default 32 MiB)
    go up in parts, ``max_concurrency`` at a time (default 4), each part retried up to
    ``part_retries`` times. API requests answered 429 or 503 are retried up to
    ``max_retries`` times, after the answer's ``Retry-After`` (if it is at most
    ``max_retry_wait`` seconds). ``timeout`` applies to each network read or write.

    ``delivery_key`` (``dk_…:dsec_…``, else ``STORAGE_DELIVERY_KEY``) lets
    ``files.delivery_url`` sign delivery URLs offline, on ``delivery_base_url`` (default: the
    base URL); without one it asks the API.
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
        multipart_threshold: int = 32 * MIB,
        max_concurrency: int = 4,
        part_retries: int = 5,
        transport: httpx.BaseTransport | None = None,
        delivery_key: str | None = None,
        delivery_base_url: str | None = None,
    ) -> None:
        api_key = api_key or os.environ.get(API_KEY_ENV)
        delivery_key = delivery_key or os.environ.get(DELIVERY_KEY_ENV)
        base_url = base_url or os.environ.get(BASE_URL_ENV)
        if not api_key:
            raise ConfigurationError(f"no API key: pass api_key= or set {API_KEY_ENV}")
        if not base_url:
            raise ConfigurationError(f"no base URL: pass base_url= or set {BASE_URL_ENV}")
        base_url = base_url.rstrip("/")
        if base_url.endswith("/v1"):
            base_url = base_url[: -len("/v1")]
        if not base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"the base URL must start with http:// or https://: {base_url}"
            )
        self.base_url = base_url
        self.delivery_key = DeliveryKey(delivery_key) if delivery_key else None
        self.delivery_base_url = (delivery_base_url or base_url).rstrip("/")
        self.multipart_threshold = multipart_threshold
        self.max_concurrency = max(1, max_concurrency)
        self.part_retries = part_retries
        self._api = Api(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_wait=max_retry_wait,
            transport=transport,
        )
        self._store = store_client(timeout, connections=self.max_concurrency + 2)
        self.files = Files(self)
        self.folders = Folders(self)
        self.jobs = Jobs(self)
        self.uploads = Uploads(self)
        self.variants = Variants(self)
        self.webhooks = Webhooks(self._api)
        self.events = Events(self._api)
        self.upload_tokens = UploadTokens(self._api)

    def me(self) -> dict[str, Any]:
        """The project, organization and API key this client authenticates as."""
        body: dict[str, Any] = self._api.request("GET", "/me")["data"]
        return body

    def usage(self) -> Usage:
        """What this key's mode stores and downloaded this month, and its limits."""
        return Usage.from_json(self._api.request("GET", "/usage")["data"])

    def close(self) -> None:
        self._api.close()
        self._store.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Client", "Files", "Folders", "Jobs", "Uploads", "Variants"]
