"""Operators find files in the admin, see their versions, and delete or restore them."""

from __future__ import annotations

from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.test import Client

from events.models import Event
from files.models import File
from tests.factories import Actor
from tests.helpers import uploaded_file
from tests.variants.images import encode, stripes
from variants.models import Variant


def staff_client() -> Client:
    user = User.objects.create_superuser("ops", "ops@example.test", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_staff_find_files_by_id_filename_and_project(owner: Actor, sibling: Actor) -> None:
    mine = uploaded_file(owner, b"a", filename="invoice-2026.pdf", contentType="text/plain")
    theirs = uploaded_file(sibling, b"b", filename="photo.txt", contentType="text/plain")
    client = staff_client()

    def listed(**query: str) -> str:
        response = client.get("/admin/files/file/", query)
        assert response.status_code == 200
        return response.content.decode()

    by_id = listed(q=mine["id"])
    assert mine["id"] in by_id and theirs["id"] not in by_id
    by_name = listed(q="voice-20")
    assert mine["id"] in by_name and theirs["id"] not in by_name
    by_project = listed(q=sibling.project.id)
    assert theirs["id"] in by_project and mine["id"] not in by_project
    by_status = listed(status__exact="uploaded")
    assert mine["id"] in by_status and theirs["id"] in by_status
    assert mine["id"] not in listed(status__exact="deleted")


def test_the_file_page_shows_versions_and_cannot_be_edited(owner: Actor) -> None:
    file = uploaded_file(owner, b"v1", contentType="text/plain")
    client = staff_client()
    page = client.get(f"/admin/files/file/{file['id']}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "File versions" in html and file["checksum"] in html
    assert 'name="_save"' not in html  # a view, not a form
    edit = client.post(f"/admin/files/file/{file['id']}/change/", {"filename": "x"})
    assert edit.status_code == 403
    assert File.objects.get(id=file["id"]).filename == file["filename"]
    assert client.get("/admin/files/file/add/").status_code == 403


def test_delete_and_restore_actions_go_through_the_service(owner: Actor) -> None:
    file = uploaded_file(owner, b"x", contentType="text/plain")
    client = staff_client()
    client.post("/admin/files/file/", {"action": "delete_files", "_selected_action": [file["id"]]})
    assert File.objects.get(id=file["id"]).status == "deleted"
    assert Event.objects.filter(type="file.deleted", data__fileId=file["id"]).count() == 1
    assert owner.get(f"/v1/files/{file['id']}").status_code == 404

    client.post("/admin/files/file/", {"action": "restore_files", "_selected_action": [file["id"]]})
    assert File.objects.get(id=file["id"]).status == "uploaded"
    assert Event.objects.filter(type="file.restored", data__fileId=file["id"]).count() == 1


def test_the_file_page_shows_its_variants_read_only(owner: Actor) -> None:
    file = uploaded_file(owner, encode(stripes(), "PNG"))
    variant = Variant.objects.filter(file_id=file["id"]).first()
    assert variant is not None
    client = staff_client()
    page = client.get(f"/admin/files/file/{file['id']}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Variants" in html and variant.id in html and variant.label in html
    assert f"/admin/variants/variant/{quote(variant.id)}/change/" in html  # "View" link
    assert client.get(f"/admin/variants/variant/{variant.id}/delete/").status_code == 403
