"""Staff see upload sessions in the admin, read-only and without the store's upload id."""

from __future__ import annotations

import pytest

from tests.accounts.test_admin import staff_client
from tests.factories import Actor
from tests.multipart import provider_id, start_multipart

pytestmark = pytest.mark.django_db


def test_sessions_are_listed_and_shown_read_only_without_the_store_id(owner: Actor) -> None:
    upload_id = start_multipart(owner, 3)["upload"]["id"]
    client = staff_client()

    listing = client.get("/admin/uploads/uploadsession/")
    page = client.get(f"/admin/uploads/uploadsession/{upload_id}/change/")
    add = client.get("/admin/uploads/uploadsession/add/")

    assert listing.status_code == 200 and upload_id in listing.content.decode()
    assert page.status_code == 200
    assert provider_id(upload_id) not in page.content.decode()
    assert "View upload session" in page.content.decode()  # no form to change it
    assert add.status_code == 403
