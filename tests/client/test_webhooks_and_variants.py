"""client.webhooks and verify() against real deliveries from the webhook worker, and
client.variants against the real image worker."""

from __future__ import annotations

import io
import json
import subprocess
import time
from pathlib import Path

import pytest
from storage_client import Client, ConflictError, NotFoundError, Variant
from storage_client.webhooks import SignatureError, verify

from tests.factories import image_bytes
from tests.webhook_receiver import Answer, Receiver

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def wait_for_status(client: Client, webhook_id: str, status: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if [d.status for d in client.webhooks.deliveries(webhook_id)][:1] == [status]:
            return
        time.sleep(0.1)
    raise AssertionError(f"no {status} delivery in time")


def test_verify_a_real_delivery_and_manage_the_endpoint(
    client: Client, celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    webhook, secret = client.webhooks.create(receiver.url("/hooks"), events=["file.uploaded"])
    assert webhook.id.startswith("wh_") and secret.startswith("whsec_")
    assert (webhook.events, webhook.status) == (["file.uploaded"], "ACTIVE")
    assert [w.id for w in client.webhooks.list()] == [webhook.id]
    assert client.webhooks.get(webhook.id) == webhook

    file = client.files.upload(io.BytesIO(b"signed"), filename="signed.txt")
    [request] = receiver.wait_for("/hooks", 1)
    header = request.headers["SERVICE-Signature"]

    event = verify(request.body, header, secret)

    assert event["type"] == "file.uploaded"
    assert event["data"]["fileId"] == file.id and event["data"]["size"] == 6
    assert event == json.loads(request.body)
    # Anything else is refused: another body, another secret, an old signature.
    with pytest.raises(SignatureError):
        verify(request.body.replace(b"signed", b"forged"), header, secret)
    with pytest.raises(SignatureError):
        verify(request.body, header, "whsec_not-the-secret")
    signed_at = int(header.split(",")[0].split("=")[1])
    while time.time() - signed_at <= 2:  # older than a tolerance of 1 s
        time.sleep(0.1)
    with pytest.raises(SignatureError, match="timestamp"):
        verify(request.body, header, secret, tolerance=1)

    wait_for_status(client, webhook.id, "DELIVERED")
    [delivery] = list(client.webhooks.deliveries(webhook.id))
    assert (delivery.event_id, delivery.attempts, delivery.response_status) == (
        event["id"],
        1,
        200,
    )
    assert delivery.event is not None and delivery.event.type == "file.uploaded"
    assert delivery.delivered_at is not None and delivery.delivered_at.tzinfo is not None
    with pytest.raises(ConflictError) as caught:
        client.webhooks.redeliver(webhook.id, delivery.id)
    assert caught.value.code == "DELIVERY_ALREADY_DELIVERED"

    client.webhooks.delete(webhook.id)
    assert client.webhooks.list() == []
    with pytest.raises(NotFoundError):
        client.webhooks.get(webhook.id)


def test_redeliver_a_failed_delivery(
    client: Client, celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    receiver.script("/down", *[Answer(status=500)] * 4)  # the attempt and its 3 retries
    webhook, secret = client.webhooks.create(receiver.url("/down"), events=["file.uploaded"])
    client.files.upload(io.BytesIO(b"x"), filename="x.txt")
    wait_for_status(client, webhook.id, "FAILED")
    [failed] = list(client.webhooks.deliveries(webhook.id))
    assert (failed.attempts, failed.response_status, failed.last_error) == (4, 500, "HTTP 500.")

    again = client.webhooks.redeliver(webhook.id, failed.id)

    assert again.id == failed.id
    wait_for_status(client, webhook.id, "DELIVERED")
    last = receiver.at("/down")[-1]
    assert verify(last.body, last.headers["SERVICE-Signature"], secret)["id"] == failed.event_id


def test_variants_create_wait_list_download(
    client: Client, celery_worker: subprocess.Popen, tmp_path: Path
) -> None:
    file = client.files.upload(io.BytesIO(image_bytes("PNG", (64, 48))), filename="cat.png")

    variant = client.variants.create(file.id, width=32, format="webp", wait=True, timeout=60)

    assert isinstance(variant, Variant)
    assert (variant.status, variant.label, variant.width, variant.height) == (
        "ready",
        "w32_cover_webp_q80",
        32,
        24,
    )
    assert variant.params is not None and variant.params.width == 32
    assert variant.content_type == "image/webp" and variant.file_id == file.id
    out = tmp_path / "thumb.webp"
    assert client.variants.download(file.id, variant.id, out) == variant.size
    head = out.read_bytes()[:12]
    assert head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    # The automatic thumbnail too; wait for it, so no worker is busy when the test ends.
    labels = {v.label for v in client.variants.list(file.id)}
    assert labels == {"w32_cover_webp_q80", "w256_h256_inside_webp_q80"}
    for other in client.variants.list(file.id):
        client.variants.wait(file.id, other.id, timeout=60)
    # Asking again answers the same variant, without new work.
    assert client.variants.create(file.id, width=32, format="webp").id == variant.id


def test_verify_refuses_malformed_headers() -> None:
    for header in ["", "t=abc,v1=00", "v1=00", "t=1", "garbage"]:
        with pytest.raises(SignatureError):
            verify(b"{}", header, "whsec_x")


def test_events_replay_and_rotation_through_the_client(
    client: Client, celery_worker: subprocess.Popen, receiver: Receiver
) -> None:
    file = client.files.upload(io.BytesIO(b"evented"), filename="e.txt")
    events = list(client.events.list(page_size=1))
    assert [e.type for e in events] == ["file.uploaded", "file.created"]
    assert events[0].data["fileId"] == file.id
    assert client.events.get(events[0].id) == events[0]
    assert [e.id for e in client.events.list(type="file.created")] == [events[1].id]
    with pytest.raises(NotFoundError):
        client.events.get("evt_00000000000000000000000000")

    webhook, old = client.webhooks.create(receiver.url("/late"), events=["file.uploaded"])
    count = client.webhooks.replay(webhook.id, since=events[-1].created_at)
    assert count == 1
    [replayed] = receiver.wait_for("/late", 1)
    assert verify(replayed.body, replayed.headers["SERVICE-Signature"], old)["id"] == events[0].id

    rotated, new = client.webhooks.rotate_secret(webhook.id, overlap_seconds=120)
    assert new != old and rotated.previous_secret_expires_at is not None
    client.webhooks.replay(webhook.id, since=events[-1].created_at)
    [_, again] = receiver.wait_for("/late", 2)
    header = again.headers["SERVICE-Signature"]
    assert verify(again.body, header, [new])["id"] == events[0].id
    assert verify(again.body, header, old)["id"] == events[0].id
    _, newest = client.webhooks.rotate_secret(webhook.id, overlap_seconds=0)
    client.webhooks.replay(webhook.id, since=events[-1].created_at)
    third = receiver.wait_for("/late", 3)[2]
    with pytest.raises(SignatureError):
        verify(third.body, third.headers["SERVICE-Signature"], [old, new])
    assert verify(third.body, third.headers["SERVICE-Signature"], [old, newest])
