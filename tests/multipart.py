"""Multipart uploads as a client does them: start, PUT parts to their URLs, complete."""

from __future__ import annotations

import os
from typing import Any

import requests

from events.models import Event
from tests.factories import Actor
from uploads.models import UploadSession

BASE = "/v1/uploads/multipart"

MIB = 1024 * 1024
PART = 8 * MIB  # the part size of any file up to 80,000 MiB


def random_bytes(size: int) -> bytes:
    return os.urandom(size)


def start_multipart(
    actor: Actor,
    size: int,
    *,
    filename: str = "big.bin",
    content_type: str = "application/octet-stream",
    **extra: Any,
) -> dict[str, Any]:
    """The `data` of a 201 initiate: `{file, upload}`."""
    response = actor.post(
        "/v1/uploads/multipart",
        {"filename": filename, "contentType": content_type, "size": size, **extra},
    )
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def put_part(part: dict[str, Any], data: bytes) -> requests.Response:
    """PUT one part's bytes to its presigned URL; the store answers its ETag."""
    return requests.put(part["url"], data=data, timeout=60)


def chunk(data: bytes, number: int, part_size: int = PART) -> bytes:
    return data[(number - 1) * part_size : number * part_size]


def put_all(upload: dict[str, Any], data: bytes) -> list[dict[str, Any]]:
    """PUT every part; returns the `parts` body of complete."""
    done = []
    for part in upload["parts"]:
        response = put_part(part, chunk(data, part["partNumber"], upload["partSize"]))
        assert response.status_code == 200, response.text
        done.append({"partNumber": part["partNumber"], "etag": response.headers["ETag"]})
    return done


def complete(actor: Actor, upload_id: str, parts: list[dict[str, Any]]) -> Any:
    return actor.post(f"{BASE}/{upload_id}/complete", {"parts": parts})


def provider_id(upload_id: str) -> str:
    return UploadSession.objects.get(id=upload_id).provider_upload_id


def events(actor: Actor, type: str) -> list[Event]:
    """The project's events of one type, oldest first."""
    return list(Event.objects.filter(project=actor.project, type=type).order_by("created_at"))
