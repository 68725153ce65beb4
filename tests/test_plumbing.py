"""Authentication, the one error body, request ids."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.services import api_key_revoke
from tests.factories import Actor
from tests.helpers import start_upload
from tests.storage import storages_with


def test_missing_key_is_unauthenticated(db: None) -> None:
    response = Client().get("/v1/files")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "accept", ["text/html", "application/xml", "image/*", "application/json; indent=4"]
)
def test_every_answer_is_json_whatever_accept_asks(owner: Actor, accept: str) -> None:
    anonymous = Client().get("/v1/files", HTTP_ACCEPT=accept)
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "UNAUTHENTICATED"
    listed = owner.client.get("/v1/files", HTTP_ACCEPT=accept)
    assert listed.status_code == 200
    assert listed["Content-Type"] == "application/json"
    assert listed.content.startswith(b'{"data":[')  # compact, as always


def test_malformed_and_unknown_keys_are_unauthenticated(db: None) -> None:
    for header in ["Token abc", "Bearer", "Bearer sk_test_short", "Bearer sk_test_" + "A" * 43]:
        response = Client().get("/v1/files", HTTP_AUTHORIZATION=header)
        assert response.status_code == 401, header
        assert response.json()["error"]["code"] == "UNAUTHENTICATED"


def test_revoked_key_stops_working_at_once(owner: Actor) -> None:
    assert owner.get("/v1/me").status_code == 200
    api_key_revoke(key_id=owner.key.api_key.id)
    response = owner.get("/v1/me")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"


def test_me_reports_project_organization_and_environment(owner: Actor) -> None:
    body = owner.get("/v1/me").json()["data"]
    assert body["project"] == {
        "id": owner.project.id,
        "name": "owner",
        "createdAt": body["project"]["createdAt"],
    }
    assert body["organization"]["name"] == "acme"
    assert body["environment"] == "test"
    assert body["apiKey"]["id"] == owner.key.api_key.id
    assert owner.key.raw_key not in str(body)


def test_unknown_route_is_a_json_404(owner: Actor) -> None:
    response = owner.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "NOT_FOUND", "message": "No such route."}}


def test_wrong_method_is_a_json_405(owner: Actor) -> None:
    response = owner.client.put("/v1/files", {}, format="json")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


def test_every_response_carries_a_request_id(owner: Actor) -> None:
    ok = owner.get("/v1/me")
    missing = Client().get("/v1/me")
    assert ok["X-Request-Id"].startswith("req_")
    assert missing["X-Request-Id"].startswith("req_")
    assert ok["X-Request-Id"] != missing["X-Request-Id"]


def test_a_sane_client_request_id_is_echoed(owner: Actor) -> None:
    response = owner.client.get("/v1/me", HTTP_X_REQUEST_ID="client-123")
    assert response["X-Request-Id"] == "client-123"
    odd = owner.client.get("/v1/me", HTTP_X_REQUEST_ID="bad id\n")
    assert odd["X-Request-Id"].startswith("req_")


def test_ids_and_timestamps_have_the_documented_shape(owner: Actor) -> None:
    response = owner.post(
        "/v1/files/upload", {"filename": "a.txt", "contentType": "text/plain", "size": 1}
    )
    file = response.json()["file"]
    assert file["id"].startswith("file_") and len(file["id"]) == 31
    assert len(file["createdAt"]) == 24 and file["createdAt"].endswith("Z")


def test_an_unexpected_failure_is_a_json_500_without_traceback(
    owner: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr("files.selectors.file_search_page", explode)
    response = owner.get("/v1/files", {"search": "a"})

    assert response.status_code == 500
    request_id = response["X-Request-Id"]
    assert response.json() == {
        "error": {
            "code": "INTERNAL_ERROR",
            "message": f"An unexpected error occurred; quote request id {request_id} when "
            "reporting it.",
            "details": {"requestId": request_id},
        }
    }
    assert "secret internals" not in response.content.decode()


def test_the_object_store_being_down_is_a_503_and_changes_nothing(
    owner: Actor, settings: Any
) -> None:
    file = start_upload(owner)["file"]
    # Nothing listens on the discard port.
    settings.STORAGES = storages_with(endpoint_url="http://127.0.0.1:9")
    response = owner.post(f"/v1/files/{file['id']}/complete")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "STORAGE_UNAVAILABLE"
    assert owner.get(f"/v1/files/{file['id']}").json()["data"]["status"] == "pending"


def test_options_names_the_route_and_its_media_types_without_a_form_of_its_fields(
    owner: Actor,
) -> None:
    response = owner.client.options("/v1/files")
    assert response.status_code == 200
    assert response["Allow"] == "GET, HEAD, OPTIONS"
    body = response.json()
    assert set(body) == {"name", "description", "renders", "parses"}
    assert body["renders"] == ["application/json"]
    assert "application/json" in body["parses"]
