"""Rows made before test and live were separated become live, and stay reachable by live keys."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.models import ApiKey, BandwidthUsage
from events.models import Event
from files.models import File, IdempotencyRecord, StoredObject
from webhooks.models import Endpoint

# The last migrations before the mode columns.
BEFORE = [
    ("accounts", "0003_bandwidthusage"),
    ("files", "0004_live_objects_by_project"),
    ("uploads", "0001_initial"),
    ("variants", "0001_initial"),
    ("webhooks", "0005_delivery_plural"),
]


def _migrate(targets: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_existing_rows_become_live() -> None:
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old = _migrate(BEFORE)
    try:
        org = old.get_model("accounts", "Organization").objects.create(name="old-org")
        project = old.get_model("accounts", "Project").objects.create(
            id="proj_old", organization=org, name="old"
        )
        stored = old.get_model("files", "StoredObject").objects.create(
            project=project, storage_key="proj_old/obj", declared_type="text/plain", declared_size=1
        )
        file = old.get_model("files", "File").objects.create(
            id="file_old",
            project=project,
            filename="old.txt",
            content_type="text/plain",
            size=1,
            current_object=stored,
        )
        old.get_model("files", "IdempotencyRecord").objects.create(
            project=project, key="k", request_hash="h", file=file, response_body={}
        )
        old.get_model("webhooks", "Endpoint").objects.create(
            id="wh_old", project=project, url="https://example.com/", secret="s"
        )
        old.get_model("webhooks", "Event").objects.create(
            id="evt_old",
            project=project,
            type="file.created",
            data={},
            created_at="2026-01-01T00:00:00Z",
        )
        old.get_model("accounts", "BandwidthUsage").objects.create(
            project=project, day="2026-01-01", bytes=1, downloads=1
        )
    finally:
        _migrate(latest)

    live = ApiKey.Environment.LIVE
    assert StoredObject.objects.get(storage_key="proj_old/obj").mode == live
    assert File.objects.get(id="file_old").mode == live
    assert IdempotencyRecord.objects.get(key="k").mode == live
    assert Endpoint.objects.get(id="wh_old").mode == live
    assert Event.objects.get(id="evt_old").mode == live
    assert BandwidthUsage.objects.get(project_id="proj_old").mode == live
