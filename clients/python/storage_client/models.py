"""The API's objects as typed, immutable Python objects with snake_case attributes.

Each is built from the JSON the service answers (camelCase) by ``from_json``. Timestamps
become aware ``datetime`` objects in UTC. Fields the service adds later are kept, untouched,
in ``raw`` (the whole JSON object as received), so an older client never breaks on a newer
service and nothing the service said is lost.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

_TIMESTAMP = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$"
)


def parse_datetime(value: str) -> datetime:
    """An ISO 8601 timestamp as an aware datetime (``Z``, offsets and any number of
    fractional digits, which ``datetime.fromisoformat`` refuses before Python 3.11)."""
    match = _TIMESTAMP.match(value)
    if match is None:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    micros = int((fraction or "0")[:6].ljust(6, "0"))
    tz = timezone.utc
    if sign:
        offset = timedelta(hours=int(off_h), minutes=int(off_m))
        tz = timezone(offset if sign == "+" else -offset)
    elif not zulu:
        tz = timezone.utc  # the API always answers UTC; a bare time is read as UTC
    return datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), micros, tzinfo=tz
    )


def _time(data: Mapping[str, Any], key: str) -> datetime:
    return parse_datetime(str(data[key]))


def _optional_time(data: Mapping[str, Any], key: str) -> datetime | None:
    value = data.get(key)
    return None if value is None else parse_datetime(str(value))


def _optional_int(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    return None if value is None else int(value)


def _optional_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return None if value is None else str(value)


@dataclass(frozen=True)
class File:
    """A stored file (``file_…``)."""

    id: str
    filename: str
    path: str | None  # the logical folder; None at the root
    content_type: str
    size: int
    status: str  # pending, uploaded, failed, deleted
    version: int
    metadata: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    uploaded_at: datetime | None = None
    checksum: str | None = None
    deleted_at: datetime | None = None
    expires_at: datetime | None = None  # when it deletes itself; None: never
    # A ThumbHash (base64) of an image's thumbnail, to paint before it loads; None otherwise.
    placeholder: str | None = None
    upload_token_id: str | None = None  # the upload token (utk_…) that started it
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> File:
        return cls(
            id=str(data["id"]),
            filename=str(data["filename"]),
            path=_optional_str(data, "path"),
            content_type=str(data["contentType"]),
            size=int(data["size"]),
            status=str(data["status"]),
            version=int(data.get("version", 1)),
            metadata=data.get("metadata"),
            created_at=_time(data, "createdAt"),
            updated_at=_time(data, "updatedAt"),
            uploaded_at=_optional_time(data, "uploadedAt"),
            checksum=_optional_str(data, "checksum"),
            deleted_at=_optional_time(data, "deletedAt"),
            expires_at=_optional_time(data, "expiresAt"),
            placeholder=_optional_str(data, "placeholder"),
            upload_token_id=_optional_str(data, "uploadTokenId"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class VariantParams:
    """The transform as requested (a side not given is None)."""

    width: int | None
    height: int | None
    fit: str
    format: str
    quality: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VariantParams:
        return cls(
            width=_optional_int(data, "width"),
            height=_optional_int(data, "height"),
            fit=str(data.get("fit", "")),
            format=str(data.get("format", "")),
            quality=int(data.get("quality", 0)),
        )


@dataclass(frozen=True)
class Variant:
    """A resized, re-encoded copy of one version of an image file (``var_…``)."""

    id: str
    file_id: str
    label: str
    status: str  # pending, processing, ready, failed
    created_at: datetime
    updated_at: datetime | None = None
    file_version: int | None = None
    params: VariantParams | None = None
    content_type: str | None = None
    width: int | None = None  # the output's real dimensions, once ready
    height: int | None = None
    size: int | None = None
    failure_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Variant:
        params = data.get("params")
        return cls(
            id=str(data["id"]),
            file_id=str(data["fileId"]),
            label=str(data["label"]),
            status=str(data["status"]),
            created_at=_time(data, "createdAt"),
            updated_at=_optional_time(data, "updatedAt"),
            file_version=_optional_int(data, "fileVersion"),
            params=VariantParams.from_json(params) if isinstance(params, Mapping) else None,
            content_type=_optional_str(data, "contentType"),
            width=_optional_int(data, "width"),
            height=_optional_int(data, "height"),
            size=_optional_int(data, "size"),
            failure_reason=_optional_str(data, "failureReason"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Folder:
    """A logical folder, derived from files' paths."""

    path: str
    name: str
    parent: str | None
    file_count: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Folder:
        return cls(
            path=str(data["path"]),
            name=str(data["name"]),
            parent=_optional_str(data, "parent"),
            file_count=int(data.get("fileCount", 0)),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Webhook:
    """A webhook endpoint (``wh_…``). Its secret is only in ``webhooks.create``'s answer."""

    id: str
    url: str
    events: list[str]
    status: str
    created_at: datetime
    # After a secret rotation: until when the replaced secret still signs (None otherwise).
    previous_secret_expires_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Webhook:
        return cls(
            id=str(data["id"]),
            url=str(data["url"]),
            events=[str(e) for e in data.get("events") or []],
            status=str(data["status"]),
            created_at=_time(data, "createdAt"),
            previous_secret_expires_at=_optional_time(data, "previousSecretExpiresAt"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Event:
    """An event (``evt_…``), exactly the envelope its webhook deliveries carry."""

    id: str
    type: str
    created_at: datetime
    data: dict[str, Any]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Event:
        return cls(
            id=str(data["id"]),
            type=str(data["type"]),
            created_at=_time(data, "created_at"),
            data=dict(data.get("data") or {}),
            raw=dict(data),
        )


@dataclass(frozen=True)
class DeliveryEvent:
    """The event a delivery carries: its type and when it happened."""

    type: str
    created_at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeliveryEvent:
        return cls(type=str(data["type"]), created_at=_time(data, "createdAt"))


@dataclass(frozen=True)
class Delivery:
    """One event's delivery to one endpoint (``dl_…``), with its attempts."""

    id: str
    event_id: str
    status: str  # PENDING, DELIVERED, FAILED
    attempts: int
    created_at: datetime
    webhook_id: str | None = None
    response_status: int | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None
    next_attempt_at: datetime | None = None
    event: DeliveryEvent | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Delivery:
        event = data.get("event")
        return cls(
            id=str(data["id"]),
            event_id=str(data["eventId"]),
            status=str(data["status"]),
            attempts=int(data.get("attempts", 0)),
            created_at=_time(data, "createdAt"),
            webhook_id=_optional_str(data, "webhookId"),
            response_status=_optional_int(data, "responseStatus"),
            last_error=_optional_str(data, "lastError"),
            delivered_at=_optional_time(data, "deliveredAt"),
            next_attempt_at=_optional_time(data, "nextAttemptAt"),
            event=DeliveryEvent.from_json(event) if isinstance(event, Mapping) else None,
            raw=dict(data),
        )


@dataclass(frozen=True)
class UploadPart:
    """A part of a multipart upload that the store holds."""

    part_number: int
    etag: str
    size: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UploadPart:
        return cls(
            part_number=int(data["partNumber"]),
            etag=str(data["etag"]),
            size=int(data["size"]),
            raw=dict(data),
        )


@dataclass(frozen=True)
class PresignedUpload:
    """Where to PUT a single upload's bytes: ``method`` to ``url`` with exactly ``headers``
    (they are signed: the declared content type and length, and ``if-none-match: *``)."""

    url: str
    method: str
    headers: dict[str, str]
    expires_at: datetime
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PresignedUpload:
        return cls(
            url=str(data["url"]),
            method=str(data.get("method") or "PUT"),
            headers={str(k): str(v) for k, v in (data.get("headers") or {}).items()},
            expires_at=_time(data, "expiresAt"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class PresignedPart:
    """Where to PUT one part of a multipart upload (with a plain ``Content-Length``)."""

    part_number: int
    url: str
    expires_at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PresignedPart:
        return cls(
            part_number=int(data["partNumber"]),
            url=str(data["url"]),
            expires_at=_time(data, "expiresAt"),
        )


@dataclass(frozen=True)
class MultipartSession:
    """A multipart upload session (``upload_…``): every part but the last is exactly
    ``part_size`` bytes; ``parts`` holds a presigned URL for each."""

    id: str
    file_id: str
    status: str  # active, aborted, completed
    size: int
    part_size: int
    part_count: int
    parts: list[PresignedPart]
    expires_at: datetime
    created_at: datetime | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MultipartSession:
        return cls(
            id=str(data["id"]),
            file_id=str(data["fileId"]),
            status=str(data["status"]),
            size=int(data["size"]),
            part_size=int(data["partSize"]),
            part_count=int(data["partCount"]),
            parts=[PresignedPart.from_json(p) for p in data.get("parts") or []],
            expires_at=_time(data, "expiresAt"),
            created_at=_optional_time(data, "createdAt"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class UsageLimits:
    """The project's limits in this mode; None where staff set none."""

    max_storage_bytes: int | None
    max_file_size_bytes: int | None
    allowed_content_types: list[str] | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UsageLimits:
        allowed = data.get("allowedContentTypes")
        return cls(
            max_storage_bytes=_optional_int(data, "maxStorageBytes"),
            max_file_size_bytes=_optional_int(data, "maxFileSizeBytes"),
            allowed_content_types=[str(t) for t in allowed] if allowed is not None else None,
        )


@dataclass(frozen=True)
class Usage:
    """What this key's mode stores (every version, the trash until purged, variants) and
    downloaded this month, and its limits."""

    storage_bytes: int
    files: int
    bandwidth_month: str  # YYYY-MM (UTC)
    bandwidth_bytes: int
    limits: UsageLimits
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        storage, bandwidth = data["storage"], data["bandwidth"]
        return cls(
            storage_bytes=int(storage["bytes"]),
            files=int(storage["files"]),
            bandwidth_month=str(bandwidth["month"]),
            bandwidth_bytes=int(bandwidth["bytes"]),
            limits=UsageLimits.from_json(data.get("limits") or {}),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Job:
    """Work on many files (a folder move, delete or restore), done by the service's workers.

    ``status`` is ``pending``, ``running``, ``succeeded`` or ``failed``; ``files_total`` is
    None until the job starts; ``error`` (the API's error object) is set when it failed."""

    id: str
    type: str
    status: str
    params: dict[str, Any]
    files_total: int | None
    files_done: int
    error: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def done(self) -> bool:
        return self.status in ("succeeded", "failed")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Job:
        error = data.get("error")
        return cls(
            id=str(data["id"]),
            type=str(data["type"]),
            status=str(data["status"]),
            params=dict(data.get("params") or {}),
            files_total=_optional_int(data, "filesTotal"),
            files_done=int(data.get("filesDone", 0)),
            error=dict(error) if isinstance(error, Mapping) else None,
            created_at=_time(data, "createdAt"),
            updated_at=_time(data, "updatedAt"),
            finished_at=_optional_time(data, "finishedAt"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class BatchResult:
    """One operation of a batch: the status and JSON body its single endpoint answers.
    ``ok`` is true for a 2xx; ``error`` is the error object otherwise."""

    op: str
    id: str
    status: int
    body: Any
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def error(self) -> dict[str, Any] | None:
        if self.ok or not isinstance(self.body, Mapping):
            return None
        error = self.body.get("error")
        return dict(error) if isinstance(error, Mapping) else None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchResult:
        return cls(
            op=str(data["op"]),
            id=str(data["id"]),
            status=int(data["status"]),
            body=data.get("body"),
            raw=dict(data),
        )
