"""The staff console: the folder browser, a file's page (previews, downloads, events), the
project page (chart, keys), filters and escaping, and who may see or change what."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import unquote, urlsplit

import requests
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.test import Client
from django.utils import timezone

from accounts.console import history
from accounts.models import ApiKey, BandwidthUsage, UsageSnapshot
from files.models import File
from tests.factories import Actor, pdf_bytes, png_bytes
from tests.helpers import uploaded_file

HOSTILE = "<img src=x onerror=alert(1)>" + "y" * 300


def login(*, superuser: bool = True, staff: bool = True, granted: Actor | None = None) -> Client:
    if superuser:
        user = User.objects.create_superuser("ops", "ops@example.test", "pw")
    else:
        user = User.objects.create_user("viewer", "v@example.test", "pw", is_staff=staff)
        if granted is not None:
            granted.project.staff_users.add(user)
    client = Client()
    client.force_login(user)
    return client


def login_again() -> Client:
    client = Client()
    client.force_login(User.objects.get(username="ops"))
    return client


def browse(client: Client, actor: Actor, **query: str) -> str:
    response = client.get(
        f"/admin/files/file/browse/{actor.project.id}/", {"mode": "test", **query}
    )
    assert response.status_code == 200
    return response.content.decode()


def test_the_browser_walks_folders_as_the_api_does(owner: Actor, sibling: Actor) -> None:
    top = uploaded_file(owner, b"a", filename="top.txt", contentType="text/plain")
    deep = uploaded_file(
        owner, b"b", filename="deep.txt", contentType="text/plain", path="reports/2026"
    )
    theirs = uploaded_file(sibling, b"c", filename="theirs.txt", contentType="text/plain")
    client = login()

    root = browse(client, owner)
    assert "top.txt" in root and "deep.txt" not in root and "theirs.txt" not in root
    assert "path=reports" in root and "📁 reports" in root
    api = owner.get("/v1/folders").json()["data"]
    assert [f["name"] for f in api] == ["reports"]

    reports = browse(client, owner, path="reports")
    assert "📁 2026" in reports and "top.txt" not in reports
    leaf = browse(client, owner, path="reports/2026")
    assert "deep.txt" in leaf and f"/admin/files/file/{quote(deep['id'])}/change/" in leaf
    assert top["id"] and theirs["id"]
    # An invalid path answers the root, saying why, never a 500.
    bad = browse(client, owner, path="../etc/" + "x" * 5000)
    assert "not a valid path" in bad and "top.txt" in bad
    live = browse(client, owner, mode="live")
    assert "top.txt" not in live  # the owner's files are test data


def test_the_browser_pages_by_cursor_newest_first(owner: Actor) -> None:
    first = uploaded_file(owner, b"a", filename="first.txt", contentType="text/plain")
    File.objects.filter(id=first["id"]).update(created_at=timezone.now() - timedelta(days=1))
    files = list(File.objects.filter(id=first["id"]))
    template = files[0]
    # 55 more rows share the first's object: a page is 50, the oldest is on the second page.
    for i in range(55):
        File.objects.create(
            project=owner.project,
            mode="test",
            filename=f"bulk-{i:02}.txt",
            content_type="text/plain",
            size=1,
            status="uploaded",
            current_object=template.current_object,
        )
    client = login()
    page1 = browse(client, owner)
    assert "bulk-54.txt" in page1 and "first.txt" not in page1
    after = re.search(r'after=([^"&]+)', page1)
    assert after is not None
    page2 = client.get(
        f"/admin/files/file/browse/{owner.project.id}/",
        {"mode": "test", "after": unquote(after.group(1))},
    ).content.decode()
    assert "first.txt" in page2 and "bulk-54.txt" not in page2


def through_delivery(url: str) -> requests.Response:
    """A preview is a delivery URL (/d/…): resolved as a browser would, then fetched."""
    path = urlsplit(url.replace("&amp;", "&")).path
    assert path.startswith("/d/dk_"), url
    answer = Client().get(path)
    assert answer.status_code == 302
    return requests.get(answer["Location"], timeout=10)


def test_a_file_page_previews_safe_types_and_downloads_every_version(owner: Actor) -> None:
    image = uploaded_file(owner, png_bytes(), filename="pic.png", contentType="image/png")
    client = login()
    # The admin's own links quote the id (file_5F01…): the page finds the file either way.
    html = client.get(f"/admin/files/file/{quote(image['id'])}/change/").content.decode()
    preview = re.search(r'id="preview-image" src="([^"]+)"', html)
    assert preview is not None
    fetched = through_delivery(preview.group(1))
    assert fetched.status_code == 200 and fetched.content == png_bytes()
    assert fetched.headers["Content-Type"] == "image/png"
    assert fetched.headers["Content-Disposition"].startswith("inline")
    download = re.search(r'<a class="download" href="([^"]+)">v1', html)
    assert download is not None
    saved = requests.get(download.group(1).replace("&amp;", "&"), timeout=10)
    assert saved.content == png_bytes()
    assert saved.headers["Content-Disposition"].startswith("attachment")
    assert "file.uploaded" in html  # the file's events


def test_a_pdf_is_shown_in_a_frame_from_the_store(owner: Actor) -> None:
    document = pdf_bytes()
    file = uploaded_file(owner, document, filename="doc.pdf", contentType="application/pdf")
    html = login().get(f"/admin/files/file/{file['id']}/change/").content.decode()
    frame = re.search(r'<iframe title="PDF preview" src="([^"]+)"', html)
    assert frame is not None
    fetched = through_delivery(frame.group(1))
    assert fetched.content == document
    assert fetched.headers["Content-Type"] == "application/pdf"
    assert fetched.headers["Content-Disposition"].startswith("inline")


def test_svg_and_html_are_download_only(owner: Actor) -> None:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    file = uploaded_file(owner, svg, filename="x.svg", contentType="image/svg+xml")
    html = login().get(f"/admin/files/file/{file['id']}/change/").content.decode()
    assert 'id="preview-image"' not in html and "<iframe" not in html
    page = uploaded_file(
        owner, b"<html><script>alert(1)</script></html>", filename="x.html", contentType="text/html"
    )
    shown = login_again().get(f"/admin/files/file/{page['id']}/change/").content.decode()
    assert "<iframe" not in shown and "offered as a download only" in shown
    assert "offered as a download only" in html
    assert "Download the current version" in html


def test_hostile_names_and_types_are_escaped_and_cut(owner: Actor) -> None:
    uploaded_file(owner, b"a", filename=HOSTILE[:200], contentType="text/plain")
    File.objects.filter(project=owner.project).update(content_type="application/" + "z" * 200)
    client = login()
    listing = client.get("/admin/files/file/").content.decode()
    assert "<img src=x" not in listing and "&lt;img src=x onerror=alert(1)&gt;" in listing
    assert "y" * 100 not in listing  # cut
    # The type filter is a fixed list of families, never the declared values.
    assert "z" * 50 not in listing and "image/*" in listing
    assert "<img src=x" not in browse(client, owner)


def test_the_type_filter_groups_by_family(owner: Actor) -> None:
    uploaded_file(owner, png_bytes(), filename="pic.png", contentType="image/png")
    uploaded_file(owner, b"a", filename="notes.txt", contentType="text/plain")
    client = login()
    images = client.get("/admin/files/file/", {"family": "image"}).content.decode()
    assert "pic.png" in images and "notes.txt" not in images
    texts = client.get("/admin/files/file/", {"family": "text"}).content.decode()
    assert "notes.txt" in texts and "pic.png" not in texts


def test_the_project_page_charts_usage_and_lists_limits(owner: Actor) -> None:
    uploaded_file(owner, b"abcd", filename="a.txt", contentType="text/plain")
    today = timezone.now().date()
    BandwidthUsage.objects.create(project=owner.project, mode="test", day=today, bytes=2048)
    UsageSnapshot.objects.create(
        project=owner.project, mode="test", day=today - timedelta(days=40), storage_bytes=7, files=1
    )
    client = login()
    html = client.get(f"/admin/accounts/project/{owner.project.id}/change/?mode=test").content
    page = html.decode()
    assert 'id="usage-chart"' in page and "2.0\xa0KB" in page
    snapshot = UsageSnapshot.objects.get(project=owner.project, mode="test", day=today)
    assert snapshot.files == 1 and snapshot.storage_bytes == 4
    drawn = history(owner.tenant)
    assert drawn.storage.values[0] == 7  # carried from before the window
    assert drawn.storage.values[-1] == 4 and drawn.bandwidth.values[-1] == 2048


def test_staff_issue_and_revoke_a_key_on_the_project_page(owner: Actor) -> None:
    client = login()
    url = f"/admin/accounts/project/{owner.project.id}/keys/api/issue/"
    response = client.post(url, {"mode": "live", "name": "console"})
    assert response.status_code == 302
    shown = " ".join(str(m) for m in get_messages(response.wsgi_request))
    raw = re.search(r"sk_live_[A-Za-z0-9_-]{43}", shown)
    assert raw is not None
    key = ApiKey.objects.get(project=owner.project, name="console")
    project_page = f"/admin/accounts/project/{owner.project.id}/change/"
    assert raw.group(0) in client.get(project_page).content.decode()  # the one time
    page = client.get(project_page).content.decode()
    assert raw.group(0) not in page and key.prefix in page
    revoke = f"/admin/accounts/project/{owner.project.id}/keys/api/{key.id}/revoke/"
    assert client.get(revoke).status_code == 405
    assert client.post(revoke).status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_staff_without_permissions_look_but_do_not_change(owner: Actor) -> None:
    viewer = login(superuser=False, granted=owner)
    assert viewer.get(f"/admin/accounts/project/{owner.project.id}/change/").status_code == 200
    url = f"/admin/accounts/project/{owner.project.id}/keys/api/issue/"
    assert viewer.post(url, {"mode": "live"}).status_code == 403
    key = ApiKey.objects.get(project=owner.project)
    revoke = f"/admin/accounts/project/{owner.project.id}/keys/api/{key.id}/revoke/"
    assert viewer.post(revoke).status_code == 403
    key.refresh_from_db()
    assert key.revoked_at is None


def test_only_staff_reach_the_console(owner: Actor) -> None:
    outsider = login(superuser=False, staff=False)
    for url in (
        f"/admin/files/file/browse/{owner.project.id}/",
        f"/admin/accounts/project/{owner.project.id}/change/",
        f"/admin/accounts/project/{owner.project.id}/keys/api/issue/",
    ):
        response = outsider.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert login().get("/admin/files/file/browse/proj_missing/").status_code == 404


def test_the_hourly_sweep_snapshots_every_tenant(owner: Actor, sibling: Actor) -> None:
    from django.conf import settings

    from accounts.tasks import snapshot_usage

    uploaded_file(owner, b"abc", filename="a.txt", contentType="text/plain")
    assert settings.CELERY_BEAT_SCHEDULE["snapshot-usage"]["task"] == snapshot_usage.name
    assert snapshot_usage() == 4  # two projects, two modes each
    today = timezone.now().date()
    mine = UsageSnapshot.objects.get(project=owner.project, mode="test", day=today)
    assert (mine.storage_bytes, mine.files) == (3, 1)
    assert snapshot_usage() == 4  # the day's row is updated, not added
    assert UsageSnapshot.objects.filter(day=today).count() == 4


def test_staff_issue_and_revoke_a_delivery_key_on_the_project_page(owner: Actor) -> None:
    from delivery.models import DeliveryKey

    client = login()
    base = f"/admin/accounts/project/{owner.project.id}/keys/delivery"
    response = client.post(f"{base}/issue/", {"mode": "test"})
    assert response.status_code == 302 and "mode=test" in response["Location"]
    shown = " ".join(str(m) for m in get_messages(response.wsgi_request))
    secret = re.search(r"dsec_[A-Za-z0-9_-]+", shown)
    assert secret is not None
    key = DeliveryKey.objects.get(project=owner.project, mode="test")
    listed = owner.get("/v1/delivery-keys").json()["data"]  # the tenant's key, for the API too
    assert [item["id"] for item in listed] == [key.id]
    project_page = f"/admin/accounts/project/{quote(owner.project.id)}/change/?mode=test"
    assert secret.group(0) in client.get(project_page).content.decode()  # the one time
    page = client.get(project_page).content.decode()
    assert key.id in page and secret.group(0) not in page
    assert client.post(f"{base}/{key.id}/revoke/").status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert client.post(f"{base}/dk_unknown/revoke/").status_code == 404
    assert (
        client.post(f"/admin/accounts/project/{owner.project.id}/keys/nope/issue/").status_code
        == 404
    )


def test_staff_issue_and_revoke_an_upload_token_on_the_project_page(owner: Actor) -> None:
    from uploads.models import UploadToken

    client = login()
    base = f"/admin/accounts/project/{owner.project.id}/keys/upload-token"
    response = client.post(f"{base}/issue/", {"mode": "test"})
    assert response.status_code == 302
    shown = " ".join(str(m) for m in get_messages(response.wsgi_request))
    secret = re.search(r"ut_[A-Za-z0-9_-]{43}", shown)
    assert secret is not None
    token = UploadToken.objects.get(project=owner.project)
    assert (token.mode, token.max_files, token.revoked_at) == ("test", 1, None)
    listed = owner.get("/v1/upload-tokens").json()["data"]
    assert [item["id"] for item in listed] == [token.id]
    assert client.post(f"{base}/{token.id}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    viewer = login(superuser=False, granted=owner)
    assert viewer.post(f"{base}/issue/", {"mode": "test"}).status_code == 403
