"""POST/GET/DELETE /v1/delivery-keys, and the operators' commands."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from accounts.services import api_key_issue
from delivery.models import DeliveryKey
from tests.factories import Actor
from tests.helpers import error_code

pytestmark = pytest.mark.django_db


def create_key(actor: Actor) -> dict:
    response = actor.post("/v1/delivery-keys", {})
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def test_a_new_key_shows_its_secret_once(owner: Actor) -> None:
    created = create_key(owner)
    key = created["deliveryKey"]
    assert key["id"].startswith("dk_")
    assert key["revokedAt"] is None
    assert created["secret"].startswith("dsec_") and len(created["secret"]) == 48
    listed = owner.get("/v1/delivery-keys").json()["data"]
    assert listed == [key]
    assert "secret" not in str(listed)
    # Not stored: the row holds a salt the secret is derived from, never the secret.
    row = DeliveryKey.objects.get(id=key["id"])
    assert created["secret"] not in {row.salt, str(row.__dict__)}


def test_an_eleventh_active_key_is_refused_until_one_is_revoked(owner: Actor) -> None:
    keys = [create_key(owner)["deliveryKey"]["id"] for _ in range(10)]
    refused = owner.post("/v1/delivery-keys", {})
    assert refused.status_code == 403
    assert error_code(refused) == "DELIVERY_KEY_LIMIT_REACHED"
    revoked = owner.delete(f"/v1/delivery-keys/{keys[0]}")
    assert revoked.status_code == 200
    assert revoked.json() == {"data": {"id": keys[0], "revoked": True}}
    assert owner.post("/v1/delivery-keys", {}).status_code == 201


def test_another_projects_key_is_not_found(owner: Actor, sibling: Actor) -> None:
    key = create_key(owner)["deliveryKey"]["id"]
    for response in (
        sibling.delete(f"/v1/delivery-keys/{key}"),
        sibling.delete("/v1/delivery-keys/dk_nonsense"),
    ):
        assert response.status_code == 404
        assert error_code(response) == "DELIVERY_KEY_NOT_FOUND"
    assert sibling.get("/v1/delivery-keys").json()["data"] == []
    assert owner.get("/v1/delivery-keys").json()["data"][0]["revokedAt"] is None


def test_scopes_read_lists_write_creates_and_revokes(owner: Actor) -> None:
    reader = APIClient()
    issued = api_key_issue(project=owner.project, environment="test", scopes=["files:read"])
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
    assert reader.get("/v1/delivery-keys").status_code == 200
    refused = reader.post("/v1/delivery-keys", {}, format="json")
    assert refused.status_code == 403
    assert error_code(refused) == "INSUFFICIENT_SCOPE"
    key = create_key(owner)["deliveryKey"]["id"]
    assert reader.delete(f"/v1/delivery-keys/{key}").status_code == 403


def test_the_operators_commands_issue_and_revoke(owner: Actor) -> None:
    out = io.StringIO()
    call_command("issue_delivery_key", owner.project.id, "--mode", "test", stdout=out)
    pair = out.getvalue().splitlines()[0]
    key_id, secret = pair.split(":")
    assert secret.startswith("dsec_")
    assert owner.get("/v1/delivery-keys").json()["data"][0]["id"] == key_id
    call_command("revoke_delivery_key", key_id, stdout=io.StringIO())
    call_command("revoke_delivery_key", key_id, stdout=io.StringIO())  # safe to re-run
    assert owner.get("/v1/delivery-keys").json()["data"][0]["revokedAt"] is not None
