"""The event envelope: what ``GET /v1/events`` answers and every webhook delivery carries
(see storage_service/openapi/)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from storage_service.openapi import JsonSchema, id_schema
from storage_service.shapes import Timestamp

EventId = Annotated[str, id_schema("evt")]
EventType = Literal[
    "file.created",
    "file.uploaded",
    "file.downloaded",
    "file.replaced",
    "file.copied",
    "file.renamed",
    "file.moved",
    "file.metadata_updated",
    "file.processed",
    "file.processing_failed",
    "file.deleted",
    "file.restored",
    "file.purged",
    "file.expired",
    "upload.initiated",
    "upload.completed",
    "upload.aborted",
    "webhook_endpoint.disabled",
    "folder.moved",
    "folder.deleted",
    "folder.restored",
]


class EventEnvelopeJson(TypedDict):
    """The body of every webhook request. ``data`` holds ``projectId``, ``organizationId``,
    the ids of the resources concerned and the fields the event is about. Deliveries are at
    least once: deduplicate on ``id``."""

    id: EventId
    type: EventType
    created_at: Timestamp
    # Named, so that generated clients give the payload its own class (an inline object
    # would be named "EventEnvelopeData", the name of the {"data": <envelope>} answer).
    data: Annotated[dict[str, Any], JsonSchema(title="EventPayload")]
