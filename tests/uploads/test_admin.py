"""Staff see upload sessions in the admin, read-only and without the store's upload id."""

from __future__ import annotations

import pytest

from tests.accounts.test_admin import staff_client
from tests.factories import Actor
from tests.multipart import provider_id, start_multipart
from tests.uploads.tokens import mint
from uploads.models import UploadToken

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


def test_staff_read_upload_tokens_and_revoke_them(owner: Actor) -> None:
    minted = mint(owner, path="a", maxFiles=3)
    token_id = minted["uploadToken"]["id"]
    client = staff_client()

    listing = client.get("/admin/uploads/uploadtoken/")
    page = client.get(f"/admin/uploads/uploadtoken/{token_id}/change/")
    row = UploadToken.objects.get(id=token_id)
    revoked = client.post(
        "/admin/uploads/uploadtoken/",
        {"action": "revoke_upload_tokens", "_selected_action": [token_id]},
    )

    assert listing.status_code == 200 and token_id in listing.content.decode()
    assert page.status_code == 200
    assert minted["token"] not in page.content.decode()
    assert row.token_hash not in page.content.decode()
    assert revoked.status_code == 302
    assert row.revoked_at is None and UploadToken.objects.get(id=token_id).revoked_at is not None
    assert client.get("/admin/uploads/uploadtoken/add/").status_code == 403
