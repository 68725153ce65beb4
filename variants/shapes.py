"""What the variant endpoints answer (see storage_service/openapi/)."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from files.shapes import Bytes, FileId, Version
from storage_service.openapi import JsonSchema, id_schema
from storage_service.shapes import Timestamp

VariantId = Annotated[str, id_schema("var")]
VariantStatus = Literal["pending", "processing", "ready", "failed"]
Fit = Literal["cover", "contain", "fill", "inside", "outside"]
Format = Literal["webp", "jpeg", "png", "avif"]
OutputType = Literal["image/webp", "image/jpeg", "image/png", "image/avif"]
Dimension = Annotated[int, JsonSchema(minimum=1, maximum=4096)]
Pixels = Annotated[int, JsonSchema(minimum=1)]


class VariantParamsJson(TypedDict):
    """The parameters as requested; a side not given is null."""

    width: Dimension | None
    height: Dimension | None
    fit: Fit
    format: Format
    quality: Annotated[int, JsonSchema(minimum=1, maximum=100)]


class VariantJson(TypedDict):
    """A resized, re-encoded copy of one version of an image, made by a worker. ``width``,
    ``height`` (the output's real dimensions) and ``size`` are set once it is ``ready``;
    ``failureReason`` once it has ``failed``."""

    id: VariantId
    fileId: FileId
    fileVersion: Version
    label: Annotated[str, JsonSchema(example="w400_h300_cover_webp_q80")]
    status: VariantStatus
    params: VariantParamsJson
    contentType: OutputType
    width: Pixels | None
    height: Pixels | None
    size: Bytes | None
    failureReason: str | None
    createdAt: Timestamp
    updatedAt: Timestamp
