"""bench/delivery.py's other side: the peer's bucket seeded and its URLs signed through its
API, and the check that both servers' URLs answer the very bytes before anything is measured."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from email.message import Message
from typing import Any

from bench.api_throughput import Peer

PEER_IMAGE = "bench/image.webp"
PEER_THUMBS = "bench/thumbs"
SIGNED_SECONDS = 3600
# What Chromium sends for an <img>.
IMAGE_ACCEPT = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"


# --- The peer -------------------------------------------------------------------------------


def peer_upload(peer: Peer, path: str, body: bytes) -> None:
    peer.expect(
        f"the upload of {path}",
        peer.call(
            "POST",
            f"/object/{peer.bucket}/{path}",
            body,
            **{"Content-Type": "image/webp", "x-upsert": "true"},
        ),
    )


def peer_seed(peer: Peer, image: bytes, thumbnail: bytes, count: int) -> None:
    if peer.call("GET", f"/bucket/{peer.bucket}")[0] != 200:
        bucket = {"id": peer.bucket, "name": peer.bucket, "public": False}
        peer.expect(
            "the bucket's creation",
            peer.call(
                "POST",
                "/bucket",
                json.dumps(bucket).encode(),
                **{"Content-Type": "application/json"},
            ),
        )
    peer_upload(peer, PEER_IMAGE, image)
    with ThreadPoolExecutor(4) as pool:
        list(
            pool.map(
                lambda n: peer_upload(peer, f"{PEER_THUMBS}/thumb-{n:04d}.webp", thumbnail),
                range(count),
            )
        )


def peer_signed(peer: Peer, paths: list[str]) -> list[str]:
    """Signed URLs of ``paths`` (absolute), in one call as an application would ask."""
    answer = peer.expect(
        "the signing",
        peer.call(
            "POST",
            f"/object/sign/{peer.bucket}",
            json.dumps({"expiresIn": SIGNED_SECONDS, "paths": paths}).encode(),
            **{"Content-Type": "application/json"},
        ),
    )
    by_path = {item["path"]: item["signedURL"] for item in answer}
    return [peer.url + by_path[path] for path in paths]


# --- Checks ---------------------------------------------------------------------------------


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def fetch(url: str, *, follow: bool = True) -> tuple[int, Message, bytes]:
    opener = urllib.request.build_opener() if follow else urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, headers={"Accept": IMAGE_ACCEPT})
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def check(delivery_url: str, peer_url: str, expected: bytes) -> None:
    """The delivery URL answers 302 (the variant is ready) to exactly these bytes; so does
    the peer's signed URL, with 200."""
    status, headers, _ = fetch(delivery_url, follow=False)
    if status != 302:
        raise SystemExit(f"the delivery URL answered {status}, not 302: {delivery_url}")
    status, _, body = fetch(headers.get("Location", ""))
    if status != 200 or body != expected:
        raise SystemExit(f"the delivery URL's Location answered {status}, {len(body)} bytes")
    status, _, body = fetch(peer_url)
    if status != 200 or body != expected:
        raise SystemExit(f"the peer's signed URL answered {status}, {len(body)} bytes")
