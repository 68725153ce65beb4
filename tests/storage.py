"""Talking to the real object store as a client would: PUT to and GET from presigned URLs."""

from __future__ import annotations

from typing import Any

import requests


def put_to(upload: dict[str, Any], data: bytes, **override_headers: str) -> requests.Response:
    headers = {**upload["headers"], **override_headers}
    return requests.request(upload["method"], upload["url"], data=data, headers=headers, timeout=30)


def get_from(url: str) -> requests.Response:
    return requests.get(url, timeout=30)
