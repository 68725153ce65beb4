"""What the multipart endpoints answer (see storage_service/openapi/)."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from files.shapes import Bytes, FileId, FileJson
from storage_service.openapi import JsonSchema, id_schema
from storage_service.shapes import Timestamp, Url
from uploads.sizing import MAX_PARTS

UploadId = Annotated[str, id_schema("upload")]
SessionStatus = Literal["active", "aborted", "completed"]
PartNumber = Annotated[int, JsonSchema(minimum=1, maximum=MAX_PARTS)]


class PresignedPartJson(TypedDict):
    """Where to PUT one part's bytes (a plain PUT with their exact length); the PUT answers
    the part's ``ETag``, which complete needs."""

    partNumber: PartNumber
    url: Url
    expiresAt: Timestamp


class MultipartSessionJson(TypedDict):
    """A multipart upload session. ``id`` is the only upload id a client ever sees. There
    are ``partCount`` parts, each exactly ``partSize`` bytes but the last."""

    id: UploadId
    fileId: FileId
    status: SessionStatus
    size: Annotated[int, JsonSchema(minimum=1)]
    partSize: Annotated[int, JsonSchema(minimum=1)]
    partCount: PartNumber
    parts: list[PresignedPartJson]
    expiresAt: Timestamp
    createdAt: Timestamp


class MultipartStartedJson(TypedDict):
    file: FileJson
    upload: MultipartSessionJson


class SignedPartsJson(TypedDict):
    id: UploadId
    parts: list[PresignedPartJson]


class HeldPartJson(TypedDict):
    """A part the store holds: its etag (without quotes) and its size."""

    partNumber: PartNumber
    etag: str
    size: Bytes


class HeldPartsJson(TypedDict):
    parts: list[HeldPartJson]


class UploadAbortedJson(TypedDict):
    id: UploadId
    aborted: Literal[True]
