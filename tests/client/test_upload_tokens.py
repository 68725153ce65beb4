"""The Python client and the CLI mint, list, show and revoke upload tokens, and a token they
mint uploads a file on its own (as a page would) against the real server and store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from storage_client import Client, UploadToken

from tests.client.test_cli import Cli
from tests.factories import Actor, png_bytes

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_client_mints_a_token_that_uploads_alone(
    actor: Actor, make_client: Callable[..., Client], api_base: str
) -> None:
    client = make_client(actor)
    token, raw = client.upload_tokens.create(
        path="avatars",
        max_file_size_bytes=1000,
        allowed_content_types=["image/*"],
        max_files=2,
        metadata={"userId": 7},
        allowed_origins=["https://app.example"],
    )
    assert isinstance(token, UploadToken) and raw.startswith("ut_")
    assert (token.path, token.max_files, token.files_started) == ("avatars", 2, 0)
    assert token.allowed_content_types == ["image/*"]

    data = png_bytes()
    headers = {"Authorization": f"Bearer {raw}", "Origin": "https://app.example"}
    with httpx.Client(base_url=api_base, headers=headers) as page:
        start = page.post(
            "/v1/files/upload",
            json={"filename": "me.png", "contentType": "image/png", "size": len(data)},
        )
        assert start.status_code == 201, start.text
        upload = start.json()["upload"]
        assert httpx.put(upload["url"], content=data, headers=upload["headers"]).status_code == 200
        file_id = start.json()["file"]["id"]
        assert page.post(f"/v1/files/{file_id}/complete").status_code == 200

    file = client.files.get(file_id)
    assert file.upload_token_id == token.id and file.metadata == {"userId": 7}
    assert httpx.get(client.files.download_url(file_id)).content == data
    assert client.upload_tokens.get(token.id).files_started == 1
    assert [t.id for t in client.upload_tokens.list()] == [token.id]
    client.upload_tokens.revoke(token.id)
    assert client.upload_tokens.get(token.id).revoked_at is not None


def test_the_cli_mints_lists_shows_and_revokes(actor: Actor, api_base: str, tmp_path: Path) -> None:
    cli = Cli(actor, api_base, tmp_path)

    minted = cli.json(
        "upload-tokens", "add", "--path", "docs", "--types", "application/pdf,image/*",
        "--max-files", "3", "--expires-in", "600", "--origins", "https://app.example",
        "--metadata", '{"team": "ops"}',
    )  # fmt: skip
    token_id = minted["uploadToken"]["id"]

    assert minted["token"].startswith("ut_")
    assert minted["uploadToken"]["allowedContentTypes"] == ["application/pdf", "image/*"]
    assert minted["uploadToken"]["metadata"] == {"team": "ops"}
    assert [t["id"] for t in cli.json("upload-tokens", "ls")] == [token_id]
    assert cli.json("upload-tokens", "show", token_id)["maxFiles"] == 3
    assert cli.json("upload-tokens", "rm", token_id) == {"id": token_id, "revoked": True}
    assert cli.json("upload-tokens", "show", token_id)["revokedAt"] is not None
    plain = cli.run("upload-tokens", "add")
    assert plain.returncode == 0 and "shown once" in plain.stdout
    refused = cli.run("upload-tokens", "add", "--max-files", "10001")
    assert refused.returncode == 1 and "VALIDATION_ERROR" in refused.stderr
