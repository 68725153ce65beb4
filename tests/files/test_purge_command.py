from __future__ import annotations

from datetime import timedelta
from io import StringIO

from django.core.management import call_command
from django.utils import timezone

from files.models import File
from storage_service import objectstore
from tests.factories import Actor
from tests.helpers import uploaded_file


def purge(*args: str) -> list[str]:
    out = StringIO()
    call_command("purge_deleted_files", *args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_dry_run_lists_and_changes_nothing(owner: Actor) -> None:
    file = uploaded_file(owner)
    owner.delete(f"/v1/files/{file['id']}")

    lines = purge("--grace-days", "0", "--dry-run")

    assert lines == [f"would purge {file['id']}", "Dry run: 1 file(s) would be purged."]
    assert File.objects.get(id=file["id"]).purged_at is None


def test_the_grace_window_protects_recent_deletes(owner: Actor) -> None:
    recent = uploaded_file(owner)
    old = uploaded_file(owner)
    owner.delete(f"/v1/files/{recent['id']}")
    owner.delete(f"/v1/files/{old['id']}")
    File.objects.filter(id=old["id"]).update(deleted_at=timezone.now() - timedelta(days=8))

    lines = purge()  # the default grace window: 7 days

    assert lines[-1] == "Purged 1 file(s); removed 1 object(s)."
    assert File.objects.get(id=old["id"]).purged_at is not None
    assert File.objects.get(id=recent["id"]).purged_at is None
    assert objectstore.head(File.objects.get(id=recent["id"]).current_object.storage_key)
    assert owner.post(f"/v1/files/{recent['id']}/restore").status_code == 200

    assert purge()[-1] == "Purged 0 file(s); removed 0 object(s)."  # safe to re-run
