"""``client.variants``: resized copies of images, made by a worker, and waiting for them."""

from __future__ import annotations

import time
from collections.abc import Iterator

from storage_client import _transfer
from storage_client._resource import Resource
from storage_client._transfer import Destination, Progress
from storage_client.errors import StorageError, VariantFailedError, WaitTimeoutError
from storage_client.models import Variant


class Variants(Resource):
    def create(
        self,
        file_id: str,
        *,
        width: int | None = None,
        height: int | None = None,
        fit: str | None = None,
        format: str | None = None,
        quality: int | None = None,
        wait: bool = False,
        timeout: float = 60,
    ) -> Variant:
        """Ask for a resized copy (made by a worker). With ``wait=True``, wait until it is
        ``ready`` (``VariantFailedError`` if it fails, ``WaitTimeoutError`` after
        ``timeout`` seconds)."""
        params = {"width": width, "height": height, "fit": fit, "format": format}
        params["quality"] = quality
        body = {k: v for k, v in params.items() if v is not None}
        variant = Variant.from_json(
            self._api.request("POST", f"/files/{file_id}/transform", json=body)["data"]
        )
        if not wait:
            return variant
        return self.wait(file_id, variant.id, timeout=timeout)

    def wait(self, file_id: str, variant_id: str, *, timeout: float = 60) -> Variant:
        """Poll until the variant is ``ready``."""
        deadline = time.monotonic() + timeout
        delay = 0.2
        while True:
            variant = next((v for v in self.list(file_id) if v.id == variant_id), None)
            if variant is None:
                raise StorageError(f"variant {variant_id} is not among file {file_id}'s")
            if variant.status == "ready":
                return variant
            if variant.status == "failed":
                error = VariantFailedError(
                    f"variant {variant.label} failed: {variant.failure_reason or 'no reason'}",
                    code="VARIANT_FAILED",
                )
                error.variant = variant
                raise error
            if time.monotonic() + delay > deadline:
                raise WaitTimeoutError(
                    f"variant {variant.label} still {variant.status} after {timeout:g} s",
                    code="WAIT_TIMEOUT",
                )
            time.sleep(delay)
            delay = min(2.0, delay * 1.5)

    def list(self, file_id: str) -> Iterator[Variant]:
        """Every variant of every version of the file, oldest first."""
        for item in self._api.pages(f"/files/{file_id}/variants"):
            yield Variant.from_json(item)

    def download(
        self,
        file_id: str,
        variant_id: str,
        destination: Destination,
        *,
        progress: Progress | None = None,
    ) -> int:
        """Stream a ``ready`` variant's bytes to a path or a binary file object."""
        url = self._api.request(
            "POST", f"/files/{file_id}/variants/{variant_id}/download-url", json={}
        )["url"]
        return _transfer.download(
            self._client._store,
            str(url),
            destination,
            retries=self._client.part_retries,
            progress=progress,
        )
