"""The ``data`` of every file event, in one place so all file events agree on their fields."""

from __future__ import annotations

from typing import Any

from accounts.tenancy import Tenant
from events.models import Event
from events.services import event_record
from files.models import File


def file_event_data(file: File) -> dict[str, Any]:
    return {
        "fileId": file.id,
        "filename": file.filename,
        "path": file.path,
        "contentType": file.content_type,
        "size": file.size,
        "version": file.version,
        "status": file.status,
        "uploadTokenId": file.upload_token_id,
    }


def record_file_event(type: Event.Type, file: File, **extra: Any) -> Event:
    return event_record(tenant=Tenant.of(file), type=type, data={**file_event_data(file), **extra})
