"""Staff see only the projects granted to them (superusers every project): a staff user holding
every model permission, granted one project, learns nothing of another from any list, page,
search, popup, action, form or key endpoint of the console."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client, override_settings

from accounts.models import ApiKey, BandwidthUsage
from delivery.models import DeliveryKey
from events.models import Event
from files.models import File
from tests.factories import Actor, image_bytes
from tests.helpers import register_webhook, uploaded_file
from uploads.models import UploadToken
from webhooks.models import Endpoint

pytestmark = pytest.mark.django_db


def staff_with_every_permission(name: str = "granted") -> User:
    user = User.objects.create_user(name, f"{name}@example.test", "pw", is_staff=True)
    user.user_permissions.set(Permission.objects.all())
    return user


def client_of(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def seed(actor: Actor) -> dict[str, str]:
    """One row of each kind the console shows, in the actor's project (the webhook is never
    sent to: its host needs no DNS)."""
    file = uploaded_file(actor, image_bytes("PNG"), filename=f"{actor.project.name}.png")
    delivery_key = actor.post("/v1/delivery-keys", {}).json()["data"]["deliveryKey"]["id"]
    token = actor.post("/v1/upload-tokens", {}).json()["data"]["uploadToken"]["id"]
    with override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=True):
        webhook_id, _ = register_webhook(actor, "https://hooks.example.com/storage")
    BandwidthUsage.objects.create(project=actor.project, mode="test", day="2026-01-02", bytes=7)
    return {
        "file": file["id"],
        "project": actor.project.id,
        "api_key": actor.key.api_key.id,
        "delivery_key": delivery_key,
        "upload_token": token,
        "webhook": webhook_id,
        "event": Event.objects.filter(project=actor.project).values_list("id", flat=True)[0],
        "stored": str(File.objects.get(id=file["id"]).current_object_id),
    }


PAGES = {
    "file": "files/file",
    "project": "accounts/project",
    "api_key": "accounts/apikey",
    "delivery_key": "delivery/deliverykey",
    "upload_token": "uploads/uploadtoken",
    "webhook": "webhooks/endpoint",
    "event": "events/event",
    "stored": "files/storedobject",
}
LISTS = [
    *PAGES.values(),
    "accounts/organization",
    "accounts/bandwidthusage",
    "variants/variant",
    "jobs/job",
    "uploads/uploadsession",
    "webhooks/delivery",
]


def test_staff_see_their_granted_project_and_nothing_of_another(
    owner: Actor, sibling: Actor
) -> None:
    mine, theirs = seed(owner), seed(sibling)
    user = staff_with_every_permission()
    owner.project.staff_users.add(user)
    client = client_of(user)

    for model in LISTS:
        listing = client.get(f"/admin/{model}/")
        assert listing.status_code == 200, model
        body = listing.content.decode()
        # Every public id (a stored object's is a bare number: its page is checked below).
        shown = [value for kind, value in theirs.items() if kind != "stored"]
        for value in (*shown, sibling.project.name):
            assert value not in body, (model, value)
    assert "owner.png" in client.get("/admin/files/file/").content.decode()
    for kind, model in PAGES.items():
        assert client.get(f"/admin/{model}/{mine[kind]}/change/").status_code == 200, kind
        for view in ("change", "delete", "history"):
            answer = client.get(f"/admin/{model}/{theirs[kind]}/{view}/")
            assert answer.status_code == 404, (kind, view)
    # Search, the raw-id popup and a project chooser reach only the granted project.
    found = client.get("/admin/files/file/", {"q": theirs["file"]}).content.decode()
    assert "0 results" in found and "sibling.png" not in found
    popup = client.get("/admin/accounts/project/", {"_popup": "1", "_to_field": "id"})
    assert sibling.project.id not in popup.content.decode()
    add_form = client.get("/admin/accounts/apikey/add/").content.decode()
    assert owner.project.id in add_form and sibling.project.id not in add_form
    added = client.post(
        "/admin/accounts/apikey/add/",
        {"project": sibling.project.id, "environment": "live", "name": "sneaky"},
    )
    assert added.status_code == 200 and not ApiKey.objects.filter(name="sneaky").exists()
    # The folder browser and the key endpoints of the other project.
    assert client.get(f"/admin/files/file/browse/{sibling.project.id}/").status_code == 404
    assert client.get(f"/admin/files/file/browse/{owner.project.id}/").status_code == 200
    base = f"/admin/accounts/project/{sibling.project.id}/keys"
    assert client.post(f"{base}/api/issue/", {"mode": "live"}).status_code == 404
    assert client.post(f"{base}/delivery/{theirs['delivery_key']}/revoke/").status_code == 404
    assert client.post(f"{base}/upload-token/{theirs['upload_token']}/revoke/").status_code == 404
    assert ApiKey.objects.filter(project=sibling.project).count() == 1
    # An action naming the other project's rows changes none of them.
    client.post(
        "/admin/accounts/apikey/",
        {"action": "revoke_keys", "_selected_action": [theirs["api_key"], mine["api_key"]]},
    )
    assert ApiKey.objects.get(id=theirs["api_key"]).revoked_at is None
    assert ApiKey.objects.get(id=mine["api_key"]).revoked_at is not None
    assert DeliveryKey.objects.get(id=theirs["delivery_key"]).revoked_at is None
    assert UploadToken.objects.get(id=theirs["upload_token"]).revoked_at is None
    assert Endpoint.objects.filter(id=theirs["webhook"]).exists()
    # The shared organization's page lists the granted project only.
    organization = client.get(
        f"/admin/accounts/organization/{owner.project.organization_id}/change/"
    ).content.decode()
    assert owner.project.id in organization and sibling.project.id not in organization
    # Who is granted is the superusers' to set: not on this user's page.
    page = client.get(f"/admin/accounts/project/{owner.project.id}/change/").content.decode()
    assert "staff_users" not in page


def test_a_group_grant_and_a_superuser(owner: Actor, sibling: Actor) -> None:
    mine, theirs = seed(owner), seed(sibling)
    group = Group.objects.create(name="support")
    user = staff_with_every_permission("member")
    user.groups.add(group)
    client = client_of(user)
    assert client.get(f"/admin/files/file/{theirs['file']}/change/").status_code == 404
    sibling.project.staff_groups.add(group)
    assert client.get(f"/admin/files/file/{theirs['file']}/change/").status_code == 200
    assert client.get(f"/admin/files/file/{mine['file']}/change/").status_code == 404

    superuser = client_of(User.objects.create_superuser("root", "r@example.test", "pw"))
    listing = superuser.get("/admin/files/file/").content.decode()
    assert mine["file"] in listing and theirs["file"] in listing
    page = superuser.get(f"/admin/accounts/project/{owner.project.id}/change/").content.decode()
    assert "staff_users" in page and "staff_groups" in page
