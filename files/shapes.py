"""What the Files endpoints answer: one TypedDict per object (see storage_service/openapi/)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from storage_service.errors import ErrorJson
from storage_service.openapi import JsonSchema, id_schema
from storage_service.shapes import Data, Timestamp, Url

FileId = Annotated[str, id_schema("file")]
FileStatus = Literal["pending", "uploaded", "failed", "deleted"]
Bytes = Annotated[int, JsonSchema(minimum=0)]
Version = Annotated[int, JsonSchema(minimum=1)]
Checksum = Annotated[
    str,
    JsonSchema(
        pattern="^(sha256|etag):.+$",
        description="`sha256:<hex>` where the store gives a SHA-256, else `etag:<etag>` "
        "(the MD5 of a single PUT, `<md5>-<parts>` for a multipart upload).",
    ),
]


class FileJson(TypedDict):
    """A file: its logical name, folder and metadata, and its current version's bytes.
    ``uploadedAt`` and ``checksum`` appear once it is uploaded; ``deletedAt`` only while it
    is deleted; ``expiresAt`` is always there (null when the file does not expire)."""

    id: FileId
    filename: str
    path: Annotated[str | None, JsonSchema(description="The folder; null at the root.")]
    contentType: str
    size: Bytes
    status: FileStatus
    version: Version
    metadata: dict[str, Any] | None
    createdAt: Timestamp
    updatedAt: Timestamp
    expiresAt: Annotated[
        Timestamp | None,
        JsonSchema(description="When the file deletes itself (`file.expired`); null: never."),
    ]
    placeholder: Annotated[
        str | None,
        JsonSchema(
            description="A ThumbHash (base64) of the image's thumbnail, to paint before the "
            "image loads; null until the thumbnail is made, and for files that are not images."
        ),
    ]
    uploadTokenId: Annotated[
        str | None,
        JsonSchema(description="The upload token (`utk_…`) that started the file; null: a key."),
    ]
    uploadedAt: NotRequired[Timestamp]
    checksum: NotRequired[Checksum]
    deletedAt: NotRequired[Timestamp]


class UploadDescriptorJson(TypedDict):
    """Where and how to PUT the bytes: send exactly ``headers`` with the PUT. The signature
    covers the content type, the exact length and ``If-None-Match``, so the store refuses
    other bytes (403) and a second PUT (412)."""

    url: Url
    method: Literal["PUT"]
    headers: dict[str, str]
    expiresAt: Timestamp


class FileWithUploadJson(TypedDict):
    file: FileJson
    upload: UploadDescriptorJson


class FileCompletedJson(TypedDict):
    id: FileId
    status: Literal["uploaded"]
    uploadedAt: Timestamp
    checksum: Checksum
    version: Version


class FileDeletedJson(TypedDict):
    id: FileId
    deleted: Literal[True]


class DownloadUrlJson(TypedDict):
    """A presigned GET of the bytes, valid until ``expiresAt``."""

    url: Url
    expiresAt: Timestamp


class FolderJson(TypedDict):
    """A folder, derived from the paths of the files in it or below it."""

    path: str
    name: str
    parent: str | None
    fileCount: Annotated[int, JsonSchema(minimum=1)]


# --- Batches ---------------------------------------------------------------------------------

BatchOp = Literal["update", "delete", "restore", "copy"]


class BatchResultJson(TypedDict):
    """One operation's answer, exactly as its single endpoint answers: ``status`` is that
    endpoint's HTTP status and ``body`` its JSON body (``PATCH`` and ``…/restore``: the file;
    ``DELETE``: ``{"data": {"id", "deleted"}}``; ``…/copy``: the new file, 201; an error: the
    error body)."""

    op: BatchOp
    id: str
    status: Annotated[int, JsonSchema(minimum=200, maximum=599)]
    body: FileJson | Data[FileDeletedJson] | ErrorJson
