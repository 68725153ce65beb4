"""The operators' commands, as an operator would run them."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from accounts.models import ApiKey, Project


def run(*args: str) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_create_project_then_issue_a_key_that_works(db: None) -> None:
    project_id = run("create_project", "--name", "shop", "--organization", "acme")[-1]
    raw_key = run("issue_api_key", "--project", project_id, "--environment", "live")[-1]

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    me = client.get("/v1/me").json()["data"]

    assert Project.objects.get(id=project_id).organization.name == "acme"
    assert raw_key.startswith("sk_live_")
    assert (me["project"]["id"], me["project"]["name"], me["environment"]) == (
        project_id,
        "shop",
        "live",
    )
    stored = ApiKey.objects.get(project_id=project_id)
    assert raw_key not in (stored.key_hash, stored.prefix)
    assert raw_key.startswith(stored.prefix)


def test_revoke_api_key_stops_the_key(db: None) -> None:
    project_id = run("create_project", "--name", "shop")[-1]
    raw_key = run("issue_api_key", "--project", project_id, "--environment", "test")[-1]
    key_id = ApiKey.objects.get(project_id=project_id).id

    run("revoke_api_key", key_id)
    run("revoke_api_key", key_id)  # safe to re-run

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    assert client.get("/v1/me").status_code == 401


def test_commands_refuse_unknown_ids_and_environments(db: None) -> None:
    with pytest.raises(CommandError):
        run("issue_api_key", "--project", "proj_missing", "--environment", "test")
    with pytest.raises(CommandError):
        run("revoke_api_key", "key_missing")
    project_id = run("create_project", "--name", "x")[-1]
    with pytest.raises(CommandError):
        run("issue_api_key", "--project", project_id, "--environment", "staging")
