"""Racing transitions on one session: one outcome, never two."""

from __future__ import annotations

import pytest

from events.models import Event
from files.models import File, FileVersion
from storage_service import objectstore
from tests.factories import Actor, make_actor
from tests.helpers import at_once, error_code
from tests.multipart import complete, put_all, start_multipart
from uploads.models import UploadSession

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def actor(transactional_db: None) -> Actor:
    return make_actor("racer")


def test_two_completes_give_one_success_and_one_conflict(actor: Actor) -> None:
    data = start_multipart(actor, 5)
    parts = put_all(data["upload"], b"12345")
    upload_id = data["upload"]["id"]

    responses = at_once(
        lambda: complete(actor, upload_id, parts), lambda: complete(actor, upload_id, parts)
    )

    assert sorted(r.status_code for r in responses) == [200, 409]
    conflict = next(r for r in responses if r.status_code == 409)
    assert error_code(conflict) == "UPLOAD_NOT_ACTIVE"
    assert FileVersion.objects.filter(file_id=data["file"]["id"]).count() == 1
    assert Event.objects.filter(type="upload.completed").count() == 1


@pytest.mark.parametrize("repeat", range(3))
def test_complete_racing_abort_leaves_one_consistent_outcome(actor: Actor, repeat: int) -> None:
    data = start_multipart(actor, 5)
    parts = put_all(data["upload"], b"12345")
    upload_id = data["upload"]["id"]

    done, aborted = at_once(
        lambda: complete(actor, upload_id, parts),
        lambda: actor.delete(f"/v1/uploads/multipart/{upload_id}"),
    )

    session = UploadSession.objects.get(id=upload_id)
    file = File.objects.get(id=data["file"]["id"])
    kinds = set(Event.objects.filter(type__startswith="upload.").values_list("type", flat=True))
    if done.status_code == 200:  # complete won: the abort found it completed
        assert aborted.status_code == 409 and error_code(aborted) == "UPLOAD_NOT_ACTIVE"
        assert (session.status, file.status) == ("completed", "uploaded")
        assert kinds == {"upload.initiated", "upload.completed"}
    else:  # abort won: the complete found it aborted
        assert aborted.status_code == 200
        assert done.status_code == 409 and error_code(done) == "UPLOAD_NOT_ACTIVE"
        assert (session.status, file.status) == ("aborted", "failed")
        assert kinds == {"upload.initiated", "upload.aborted"}


def test_an_abort_while_complete_asks_the_store_answers_not_active(
    actor: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Complete asks the store with no row locked; an abort that runs meanwhile releases the
    parts before it commits, so the store may list fewer parts than were PUT. That is the
    abort's trace, not the client's mistake: the answer is UPLOAD_NOT_ACTIVE, as if complete
    had waited for the abort (the race above, made deterministic)."""
    data = start_multipart(actor, 5)
    parts = put_all(data["upload"], b"12345")
    upload_id = data["upload"]["id"]

    def abort_then_list(**_: object) -> list[objectstore.HeldPart]:
        assert actor.delete(f"/v1/uploads/multipart/{upload_id}").status_code == 200
        return []  # what a store in the middle of the abort lists

    monkeypatch.setattr(objectstore, "multipart_parts", abort_then_list)
    done = complete(actor, upload_id, parts)

    assert done.status_code == 409 and error_code(done) == "UPLOAD_NOT_ACTIVE", done.json()
    assert UploadSession.objects.get(id=upload_id).status == "aborted"
    assert File.objects.get(id=data["file"]["id"]).status == "failed"


def test_a_complete_while_another_assembles_verifies_the_object(
    actor: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for two completes: while (or after) the store assembles the object for one,
    it lists fewer parts for the other, which may come before the first commits. The object
    at the key says a complete took the parts: the second verifies that object and, first to
    the lock, publishes it; the first then answers UPLOAD_NOT_ACTIVE. Never
    UPLOAD_PARTS_INCOMPLETE, and nothing published twice."""
    data = start_multipart(actor, 5)
    parts = put_all(data["upload"], b"12345")
    upload_id, file_id = data["upload"]["id"], data["file"]["id"]
    session = UploadSession.objects.get(id=upload_id)
    key, provider_id = session.stored_object.storage_key, session.provider_upload_id
    listed = objectstore.multipart_parts

    def other_assembles_then_list(**_: object) -> list[objectstore.HeldPart]:
        # The other complete's store call, before its commit.
        assert objectstore.multipart_complete(
            key=key, upload_id=provider_id, parts=[(1, parts[0]["etag"].strip('"'))]
        )
        return []  # what a store in the middle of assembling lists

    monkeypatch.setattr(objectstore, "multipart_parts", other_assembles_then_list)
    second = complete(actor, upload_id, parts)
    monkeypatch.setattr(objectstore, "multipart_parts", listed)
    first = complete(actor, upload_id, parts)

    assert second.status_code == 200, second.json()
    assert first.status_code == 409 and error_code(first) == "UPLOAD_NOT_ACTIVE", first.json()
    assert UploadSession.objects.get(id=upload_id).status == "completed"
    assert File.objects.get(id=file_id).status == "uploaded"
    assert FileVersion.objects.filter(file_id=file_id).count() == 1
    assert Event.objects.filter(type="upload.completed").count() == 1
