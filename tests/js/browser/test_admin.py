"""The admin in a real browser (tests/js/browser/admin.browser.mjs clicks; this module prepares
the staff user and a failed delivery, then checks what the clicks changed)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings

from accounts.models import ApiKey, Organization, Project
from events.services import event_record
from tests.factories import Actor
from tests.js.browser.conftest import run_browser
from tests.webhook_receiver import Answer, running_receiver
from webhooks.models import Delivery


def wait_for_status(delivery_id: str, status: str, timeout: float = 30) -> Delivery:
    deadline = time.monotonic() + timeout
    while True:
        delivery = Delivery.objects.get(id=delivery_id)
        if delivery.status == status or time.monotonic() > deadline:
            return delivery
        time.sleep(0.2)


def test_staff_manage_projects_keys_and_deliveries_in_the_admin(
    api_base: str, actor: Actor, celery_worker: object, artifacts: Path
) -> None:
    User.objects.create_superuser("staff", "staff@example.test", "browser-pw")
    with running_receiver() as receiver:
        # Every attempt fails (500) until the delivery is FAILED; the redelivery succeeds.
        receiver.default = Answer(status=500)
        with override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=True):
            response = actor.post("/v1/webhooks", {"url": receiver.url()})
        assert response.status_code == 201, response.json()
        with transaction.atomic():
            event_record(tenant=actor.tenant, type="file.created", data={"fileId": "file_x"})
        delivery = Delivery.objects.get(endpoint__project=actor.project)
        failed = wait_for_status(delivery.id, "FAILED")
        assert failed.status == "FAILED", (failed.status, failed.attempts)
        attempts = failed.attempts
        receiver.default = Answer(status=200)

        run = run_browser(
            "admin.browser.mjs",
            env={
                "API_URL": api_base,
                "ADMIN_USER": "staff",
                "ADMIN_PASSWORD": "browser-pw",
                "ORGANIZATION": "Browser Org",
                "PROJECT": "browser-project",
                "DELIVERY_ID": delivery.id,
            },
            artifacts=artifacts,
            timeout=180,
        )
        assert run.returncode == 0, run.output
        assert run.counts.get("fail") == 0 and run.counts.get("pass") == 5, run.output

        delivered = wait_for_status(delivery.id, "DELIVERED")
        assert delivered.status == "DELIVERED"
        assert delivered.attempts == attempts + 1
        assert len(receiver.at("/hook")) == attempts + 1

    report = json.loads((artifacts / "admin-report.json").read_text())
    project = Project.objects.get(id=report["projectId"])
    assert project.name == "browser-project"
    assert project.organization == Organization.objects.get(name="Browser Org")
    key = ApiKey.objects.get(project=project)
    assert key.revoked_at is not None
    assert report["keyPrefix"] == key.prefix
    for page in range(1, 14):
        assert any(artifacts.glob(f"admin-{page}-*.png")), page
