"""Every transition writes its event row, with the complete data, in the same transaction."""

from __future__ import annotations

from typing import Any

from events.envelope import event_envelope
from events.models import Event
from files.services import files_purge_expired
from tests.factories import Actor, jpeg_bytes
from tests.helpers import start_upload, uploaded_file
from tests.storage import put_to


def events(actor: Actor) -> list[Event]:
    return list(Event.objects.filter(project=actor.project).order_by("created_at", "id"))


def last(actor: Actor, type: str) -> dict[str, Any]:
    event = Event.objects.filter(project=actor.project, type=type).order_by("-created_at").first()
    assert event is not None, type
    return event.data


def test_the_whole_lifecycle_records_each_event(owner: Actor) -> None:
    file = uploaded_file(owner, filename="a.png", path="in")
    owner.patch(f"/v1/files/{file['id']}", {"filename": "b.png"})
    owner.patch(f"/v1/files/{file['id']}", {"path": "out"})
    owner.patch(f"/v1/files/{file['id']}", {"metadata": {"k": "v"}})
    owner.post(f"/v1/files/{file['id']}/download-url", {})
    copy = owner.post(f"/v1/files/{file['id']}/copy", {}).json()
    data = jpeg_bytes()
    started = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/jpeg", "size": len(data)}
    ).json()
    put_to(started["upload"], data)
    owner.post(f"/v1/files/{file['id']}/replace/complete")
    owner.delete(f"/v1/files/{file['id']}")
    owner.post(f"/v1/files/{file['id']}/restore")
    owner.delete(f"/v1/files/{file['id']}")

    uploaded = last(owner, "file.uploaded")
    assert uploaded["size"] == file["size"]
    assert uploaded["checksum"] == file["checksum"]
    assert last(owner, "file.renamed")["previousFilename"] == "a.png"
    assert (last(owner, "file.moved")["previousPath"], last(owner, "file.moved")["path"]) == (
        "in",
        "out",
    )
    assert last(owner, "file.metadata_updated")["metadata"] == {"k": "v"}

    files_purge_expired(grace_days=0)

    assert [e.type for e in events(owner)] == [
        "file.created",
        "file.uploaded",
        "file.renamed",
        "file.moved",
        "file.metadata_updated",
        "file.downloaded",
        "file.copied",
        "file.replaced",
        "file.deleted",
        "file.restored",
        "file.deleted",
        "file.purged",
    ]
    for event in events(owner):
        assert event.data["projectId"] == owner.project.id
        assert event.data["organizationId"] == owner.project.organization_id
        assert event.data["fileId"] in {file["id"], copy["id"]}
        # The purged file's events are tombstones (docs/security.md#retention); the copy's
        # are untouched.
        if event.data["fileId"] == file["id"]:
            assert not {"filename", "path", "previousFilename", "previousPath", "metadata"} & set(
                event.data
            ), event.type
    assert last(owner, "file.uploaded")["size"] == file["size"]
    assert last(owner, "file.copied")["filename"] == "b.png"
    assert last(owner, "file.copied")["sourceFileId"] == file["id"]
    assert last(owner, "file.copied")["fileId"] == copy["id"]
    replaced = last(owner, "file.replaced")
    assert (replaced["previousVersion"], replaced["version"], replaced["size"]) == (1, 2, len(data))
    assert last(owner, "file.deleted")["purgeAfter"].endswith("Z")
    assert last(owner, "file.purged")["purgedAt"].endswith("Z")


def test_a_refused_change_records_no_event(owner: Actor) -> None:
    file = start_upload(owner)["file"]
    before = len(events(owner))
    owner.post(f"/v1/files/{file['id']}/copy", {})  # 409: not uploaded
    owner.patch(f"/v1/files/{file['id']}", {"filename": "bad/name"})  # 400
    assert len(events(owner)) == before


def test_an_unchanged_patch_records_nothing(owner: Actor) -> None:
    file = start_upload(owner, filename="same.png")["file"]
    before = len(events(owner))
    assert owner.patch(f"/v1/files/{file['id']}", {"filename": "same.png"}).status_code == 200
    assert len(events(owner)) == before


def test_envelope_has_the_contract_shape(owner: Actor) -> None:
    uploaded_file(owner)
    event = Event.objects.get(project=owner.project, type="file.uploaded")
    envelope = event_envelope(event)
    assert set(envelope) == {"id", "type", "created_at", "data"}
    assert envelope["id"].startswith("evt_")
    assert envelope["created_at"].endswith("Z") and len(envelope["created_at"]) == 24
    assert {"projectId", "organizationId", "fileId", "size"} <= set(envelope["data"])
