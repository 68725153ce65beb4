"""The client's typed objects: snake_case, aware datetimes, and tolerance of what a newer
service may add (no server needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from storage_client import Delivery, File, Folder, Variant, Webhook
from storage_client.models import parse_datetime

FILE = {
    "id": "file_01m80p9qhfbw0rf406y6kr13qe",
    "filename": "a.txt",
    "path": None,
    "contentType": "text/plain",
    "size": 3,
    "status": "uploaded",
    "version": 2,
    "metadata": {"k": "v"},
    "createdAt": "2026-11-22T03:55:04.086Z",
    "updatedAt": "2026-11-22T03:55:05.000Z",
    "uploadedAt": "2026-11-22T03:55:04.900Z",
    "checksum": "etag:abc",
}


def test_timestamps_become_aware_utc_datetimes() -> None:
    expected = datetime(2026, 11, 22, 3, 55, 4, 86000, tzinfo=UTC)
    assert parse_datetime("2026-11-22T03:55:04.086Z") == expected
    assert parse_datetime("2026-11-22T03:55:04.086000+00:00") == expected
    assert parse_datetime("2026-11-22T04:55:04.086+01:00") == expected
    assert parse_datetime("2026-11-22T03:55:04Z").microsecond == 0
    assert parse_datetime("2026-11-22T03:55:04.1234567Z").microsecond == 123456
    assert parse_datetime("2026-11-22T03:55:04-05:30").utcoffset() == -timedelta(
        hours=5, minutes=30
    )
    with pytest.raises(ValueError):
        parse_datetime("yesterday")


def test_a_file_has_snake_case_attributes_and_keeps_unknown_fields() -> None:
    file = File.from_json({**FILE, "storageClass": "cold", "labels": ["x"]})
    assert (file.content_type, file.version, file.checksum) == ("text/plain", 2, "etag:abc")
    assert file.created_at.tzinfo is not None and file.deleted_at is None
    assert file.raw["storageClass"] == "cold"  # a newer service's field, kept as sent
    assert file == File.from_json(FILE)  # raw is not part of equality


def test_optional_fields_may_be_absent() -> None:
    pending = {k: v for k, v in FILE.items() if k not in ("uploadedAt", "checksum", "version")}
    file = File.from_json(pending)
    assert (file.uploaded_at, file.checksum, file.version) == (None, None, 1)


def test_variant_folder_webhook_delivery() -> None:
    variant = Variant.from_json(
        {
            "id": "var_1",
            "fileId": "file_1",
            "fileVersion": 1,
            "label": "w32_cover_webp_q80",
            "status": "ready",
            "params": {
                "width": 32,
                "height": None,
                "fit": "cover",
                "format": "webp",
                "quality": 80,
            },
            "contentType": "image/webp",
            "width": 32,
            "height": 24,
            "size": 100,
            "failureReason": None,
            "createdAt": "2026-11-22T03:55:04.086Z",
            "updatedAt": "2026-11-22T03:55:04.086Z",
            "somethingNew": 1,
        }
    )
    assert variant.params is not None and (variant.params.width, variant.params.height) == (
        32,
        None,
    )
    folder = Folder.from_json({"path": "a/b", "name": "b", "parent": "a", "fileCount": 2})
    assert (folder.parent, folder.file_count) == ("a", 2)
    webhook = Webhook.from_json(
        {
            "id": "wh_1",
            "url": "https://x",
            "events": [],
            "status": "ACTIVE",
            "createdAt": "2026-11-22T03:55:04.086Z",
        }
    )
    assert webhook.events == []
    delivery = Delivery.from_json(
        {
            "id": "dl_1",
            "webhookId": "wh_1",
            "eventId": "evt_1",
            "status": "PENDING",
            "attempts": 0,
            "responseStatus": None,
            "lastError": None,
            "deliveredAt": None,
            "nextAttemptAt": "2026-11-22T03:55:04.086Z",
            "createdAt": "2026-11-22T03:55:04.086Z",
            "event": {"type": "file.uploaded", "createdAt": "2026-11-22T03:55:04.086Z"},
        }
    )
    assert delivery.event is not None and delivery.event.type == "file.uploaded"
    assert delivery.next_attempt_at is not None and delivery.delivered_at is None
