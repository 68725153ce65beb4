"""Staff set a project's limits per mode: with set_project_limits, or on the project's admin
page, where each mode's usage stands beside its limits."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import ProjectLimits
from tests.accounts.test_admin import staff_client
from tests.factories import Actor
from tests.helpers import uploaded_file


def run(*args: str) -> str:
    out = StringIO()
    call_command("set_project_limits", *args, stdout=out)
    return out.getvalue().strip()


def test_the_command_sets_changes_and_removes_limits_and_says_what_they_are(
    owner: Actor,
) -> None:
    project = owner.project.id

    said = run(
        "--project", project, "--environment", "test", "--max-storage-bytes", "1000",
        "--allowed-content-types", "IMAGE/*, application/pdf",
    )  # fmt: skip

    assert said == (
        f"Limits of {project} (test): max storage 1000, max file size no limit, "
        "allowed types image/*,application/pdf."
    )
    # Only what is given changes; "none" removes one; re-running changes nothing more.
    run("--project", project, "--environment", "test", "--max-file-size-bytes", "10")
    run("--project", project, "--environment", "test", "--max-storage-bytes", "none")
    said = run("--project", project, "--environment", "test", "--max-storage-bytes", "none")
    assert said.endswith(
        "max storage no limit, max file size 10, allowed types image/*,application/pdf."
    )
    limits = ProjectLimits.objects.get(project=owner.project, mode="test")
    assert (limits.max_storage_bytes, limits.max_file_size_bytes) == (None, 10)
    assert not ProjectLimits.objects.filter(project=owner.project, mode="live").exists()
    usage = owner.get("/v1/usage").json()["data"]["limits"]
    assert usage == {
        "maxStorageBytes": None,
        "maxFileSizeBytes": 10,
        "allowedContentTypes": ["image/*", "application/pdf"],
    }


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--max-storage-bytes", "-1"),
        ("--max-storage-bytes", "1.5"),
        ("--max-storage-bytes", "1e9"),
        ("--max-storage-bytes", "١٢"),  # Arabic-Indic digits: int() would take them
        ("--max-file-size-bytes", "9" * 30),  # past a 64-bit integer
        ("--max-file-size-bytes", ""),
        ("--allowed-content-types", "image"),
        ("--allowed-content-types", "image/png,"),
        ("--allowed-content-types", "*/*"),
        ("--allowed-content-types", "text/plain; charset=utf-8"),
        ("--allowed-content-types", "image/p\x07ng"),
    ],
)
def test_the_command_refuses_what_is_not_a_limit(owner: Actor, flag: str, value: str) -> None:
    with pytest.raises(CommandError):
        run("--project", owner.project.id, "--environment", "test", flag, value)
    assert not ProjectLimits.objects.exists()


def test_the_command_refuses_an_unknown_project_or_mode(owner: Actor) -> None:
    with pytest.raises(CommandError):
        run("--project", "proj_nope", "--environment", "test", "--max-storage-bytes", "1")
    with pytest.raises(CommandError):
        run("--project", owner.project.id, "--environment", "prod", "--max-storage-bytes", "1")


def test_staff_set_limits_on_the_project_page_beside_its_usage(owner: Actor) -> None:
    uploaded_file(owner, b"x" * 321, contentType="text/plain", filename="a.txt")
    run("--project", owner.project.id, "--environment", "test", "--max-file-size-bytes", "5")
    limits = ProjectLimits.objects.get(project=owner.project, mode="test")
    client = staff_client()
    url = f"/admin/accounts/project/{owner.project.id}/change/"

    page = client.get(url).content.decode()
    assert "321 bytes" in page and "in 1 file(s)" in page

    form = {
        "organization": owner.project.organization_id,
        "name": owner.project.name,
        "limits-TOTAL_FORMS": "1",
        "limits-INITIAL_FORMS": "1",
        "limits-0-id": str(limits.pk),
        "limits-0-project": owner.project.id,
        "limits-0-mode": "test",
        "limits-0-max_storage_bytes": "2048",
        "limits-0-max_file_size_bytes": "",
        "limits-0-allowed_content_types": "image/*,text/plain",
        "api_keys-TOTAL_FORMS": "0",
        "api_keys-INITIAL_FORMS": "0",
    }
    saved = client.post(url, form)
    assert saved.status_code == 302, saved.content.decode()[:2000]
    limits.refresh_from_db()
    assert (limits.max_storage_bytes, limits.max_file_size_bytes) == (2048, None)
    assert limits.allowed_content_types == ["image/*", "text/plain"]

    for bad in ({"limits-0-max_storage_bytes": "-1"}, {"limits-0-allowed_content_types": "img"}):
        refused = client.post(url, {**form, **bad})
        assert refused.status_code == 200  # the form again, with the error
        limits.refresh_from_db()
        assert limits.max_storage_bytes == 2048
