"""Staff manage organizations, projects and keys in the Django admin."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import ApiKey
from accounts.services import project_create


def staff_client() -> Client:
    user = User.objects.create_superuser("staff", "staff@example.test", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_staff_issue_a_key_shown_once_and_revoke_it(db: None) -> None:
    project = project_create(name="shop", organization_name="acme")
    client = staff_client()

    response = client.post(
        "/admin/accounts/apikey/add/",
        {"project": project.id, "environment": "test", "name": "ci"},
    )

    assert response.status_code == 302
    shown = " ".join(str(m) for m in get_messages(response.wsgi_request))
    raw_key = re.search(r"sk_test_[A-Za-z0-9_-]{43}", shown)
    assert raw_key is not None
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key.group(0)}")
    assert api.get("/v1/me").status_code == 200

    key = ApiKey.objects.get(project=project)
    first_view = client.get("/admin/accounts/apikey/").content.decode()
    assert raw_key.group(0) in first_view  # the one time it is shown
    page = client.get(f"/admin/accounts/apikey/{key.id}/change/").content.decode()
    assert raw_key.group(0) not in page
    assert key.prefix in page

    client.post(
        "/admin/accounts/apikey/",
        {"action": "revoke_keys", "_selected_action": [key.id]},
    )
    assert api.get("/v1/me").status_code == 401


def test_admin_lists_organizations_and_projects(db: None) -> None:
    project_create(name="shop", organization_name="acme")
    client = staff_client()
    assert "acme" in client.get("/admin/accounts/organization/").content.decode()
    assert "shop" in client.get("/admin/accounts/project/").content.decode()


def test_staff_issue_a_restricted_key_whose_scopes_stay_fixed(db: None) -> None:
    project = project_create(name="thumbs", organization_name="acme")
    client = staff_client()

    response = client.post(
        "/admin/accounts/apikey/add/",
        {
            "project": project.id,
            "environment": "live",
            "name": "thumbnailer",
            "restricted_scopes": ["files:read", "files:write"],
        },
    )

    assert response.status_code == 302
    shown = " ".join(str(m) for m in get_messages(response.wsgi_request))
    raw_key = re.search(r"rk_live_[A-Za-z0-9_-]{43}", shown)
    assert raw_key is not None
    key = ApiKey.objects.get(project=project)
    assert key.scopes == ["files:read", "files:write"]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key.group(0)}")
    assert api.get("/v1/me").json()["data"]["apiKey"]["scopes"] == ["files:read", "files:write"]
    assert api.get("/v1/webhooks").json()["error"]["code"] == "INSUFFICIENT_SCOPE"
    page = client.get(f"/admin/accounts/apikey/{key.id}/change/").content.decode()
    assert "files:read, files:write" in page
    # The change form has no scopes field: a posted one changes nothing.
    client.post(
        f"/admin/accounts/apikey/{key.id}/change/",
        {"name": "renamed", "restricted_scopes": ["webhooks:write"], "scopes": "webhooks:write"},
    )
    key.refresh_from_db()
    assert key.scopes == ["files:read", "files:write"]

    refused = client.post(
        "/admin/accounts/apikey/add/",
        {"project": project.id, "environment": "test", "restricted_scopes": ["files:admin"]},
    )
    assert refused.status_code == 200  # the form again, with the error
    assert ApiKey.objects.filter(project=project).count() == 1
