"""What the job endpoints answer (see storage_service/openapi/)."""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from storage_service.errors import ErrorDetailJson
from storage_service.openapi import JsonSchema, id_schema
from storage_service.shapes import Timestamp

JobId = Annotated[str, id_schema("job")]
JobType = Literal["folder.move", "folder.delete", "folder.restore"]
JobStatus = Literal["pending", "running", "succeeded", "failed"]
Count = Annotated[int, JsonSchema(minimum=0)]


class JobJson(TypedDict):
    """Work on many files, done by the workers in batches. ``params`` are the request's
    (``{"from", "to"}`` for a move, ``{"path"}`` for a delete or restore; paths as stored,
    null for the root). ``filesTotal`` is null until the job starts, then the files it found
    at its start, and once it ends the files it changed (files that arrived in the folder
    meanwhile included); ``filesDone`` grows as batches commit. ``error`` (the error body's
    inner object) is set when the job ``failed``; ``finishedAt`` once it ended."""

    id: JobId
    type: JobType
    status: JobStatus
    params: dict[str, str | None]
    filesTotal: Count | None
    filesDone: Count
    error: ErrorDetailJson | None
    createdAt: Timestamp
    updatedAt: Timestamp
    finishedAt: Timestamp | None
