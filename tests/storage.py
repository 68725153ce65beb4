"""Talking to the real object store as a client would: PUT to and GET from presigned URLs."""

from __future__ import annotations

from typing import Any

import requests
from django.conf import settings

from storage_service import objectstore


def put_to(upload: dict[str, Any], data: bytes, **override_headers: str) -> requests.Response:
    headers = {**upload["headers"], **override_headers}
    return requests.request(upload["method"], upload["url"], data=data, headers=headers, timeout=30)


def get_from(url: str) -> requests.Response:
    return requests.get(url, timeout=30)


def storages_with(**options: Any) -> dict[str, dict[str, Any]]:
    """settings.STORAGES with the object store's storage given these OPTIONS (assigning it
    to the settings fixture or override_settings replaces the storage instance)."""
    storages = settings.STORAGES
    store = storages[objectstore.STORAGE_ALIAS]
    return {
        **storages,
        objectstore.STORAGE_ALIAS: {**store, "OPTIONS": {**store["OPTIONS"], **options}},
    }
