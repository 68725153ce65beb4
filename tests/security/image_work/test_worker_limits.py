"""Each file version and each worker is bounded: a number of variants per version, a time
limit per transform (never sent again once past it), and a memory cap per worker process."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
import requests
from django.test import override_settings
from django.utils import timezone

from storage_service.celery import app
from tests.helpers import wait_for
from tests.security.image_work.stack import Stack, client_for, hanging_store
from tests.servers import ROOT
from tests.variants.images import encode, stripes
from variants import services as variant_services
from variants.models import Variant

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# --- Variants per file version ----------------------------------------------------------------


def test_a_file_version_has_a_bounded_number_of_variants(stack: Stack) -> None:
    with stack.api(SERVICE_VARIANT_MAX_PER_VERSION="3") as base:
        client = client_for(base, "many-variants")
        file_id = client.upload(encode(stripes((300, 100)), "PNG"))  # its thumbnail is one
        first = client.transform(file_id, width=100)
        assert first.status_code == 202
        assert client.transform(file_id, width=101).status_code == 202

        refused = client.transform(file_id, width=102)
        assert refused.status_code == 409
        assert refused.json()["error"] == {
            "code": "VARIANT_LIMIT_REACHED",
            "message": "Version 1 of the file already has 3 variants, the most a version may "
            "have; ask again for one of them, or replace the file.",
            "details": {"fileVersion": 1, "limit": 3},
        }
        # Asking again for an existing one is still answered, and makes nothing new.
        again = client.transform(file_id, width=100)
        assert again.status_code == 202 and again.json()["data"]["id"] == first.json()["data"]["id"]
        assert len(client.variants(file_id)) == 3

        # The document lists the code for this operation.
        document = requests.get(f"{base}/v1/openapi.json", timeout=30).json()
        conflict = document["paths"]["/v1/files/{file_id}/transform"]["post"]["responses"]["409"]
        assert "`VARIANT_LIMIT_REACHED`" in conflict["description"]


# --- Time limits --------------------------------------------------------------------------------


def _claimed(file_id: str) -> Variant:
    return wait_for(
        lambda: Variant.objects.filter(file_id=file_id, status="processing").first(),
        30,
        "a worker claims the thumbnail",
    )


@pytest.mark.parametrize(
    ("soft", "hard", "limit"),
    [("2", "4", 2), ("0", "3", 3)],
    ids=["soft-limit", "hard-limit-kills-the-process"],
)
def test_a_transform_past_its_time_limit_fails_and_is_never_sent_again(
    stack: Stack, soft: str, hard: str, limit: int
) -> None:
    """The store hangs, so the transform runs on. The time limit ends it (failed, with the
    reason) before the stale threshold: the sweep, past that threshold, sends nothing again.
    With no soft limit the process is killed at the hard one and the variant fails all the
    same (the worker's parent reports it)."""
    stale = 10
    limits = {
        "SERVICE_VARIANT_SOFT_TIME_LIMIT_SECONDS": soft,
        "SERVICE_VARIANT_TIME_LIMIT_SECONDS": hard,
        "SERVICE_VARIANT_STALE_SECONDS": str(stale),
    }
    with hanging_store() as store_url, stack.api() as base:
        stack.worker({"AWS_S3_ENDPOINT_URL": store_url, **limits})
        client = client_for(base, "slow")
        file_id = client.upload(encode(stripes((300, 100)), "PNG"))
        claimed = _claimed(file_id)

        failed = client.finished(file_id, claimed.id, timeout=30)
        assert failed["status"] == "failed"
        assert failed["failureReason"] == (
            f"Processing took longer than {limit} s, the most a variant may take."
        )
        # Past the stale threshold of its claim, the sweep finds nothing to send again: the
        # sweep's clock is moved past it rather than waited for.
        past_the_threshold = timezone.now() + timedelta(seconds=stale + 1)
        with override_settings(SERVICE_VARIANT_STALE_SECONDS=stale):
            assert variant_services.variants_requeue_stale(now=past_the_threshold) == 0
        after = Variant.objects.get(id=claimed.id)
        assert (after.status, after.attempts) == ("failed", 1)


def test_time_limits_must_stay_below_the_stale_threshold() -> None:
    run = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "storage_service.settings.test",
            "SERVICE_VARIANT_TIME_LIMIT_SECONDS": "600",
            "SERVICE_VARIANT_STALE_SECONDS": "600",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert "SERVICE_VARIANT_TIME_LIMIT_SECONDS must be below SERVICE_VARIANT_STALE_SECONDS" in (
        run.stderr
    )


# --- Worker memory ------------------------------------------------------------------------------


def test_a_worker_process_over_its_memory_cap_is_replaced_after_its_task(stack: Stack) -> None:
    with stack.api() as base:
        # 1 KiB: every process is over it after any task, so each task gets a fresh one.
        node = stack.worker({"SERVICE_WORKER_MAX_MEMORY_PER_CHILD_KIB": "1"})

        def pool() -> list[int]:
            stats: dict[str, Any] = app.control.inspect(destination=[node], timeout=2).stats() or {}
            return list(stats.get(node, {}).get("pool", {}).get("processes", []))

        before = wait_for(pool, 30, "the worker's pool")
        client = client_for(base, "memory")
        file_id = client.upload(encode(stripes((300, 100)), "PNG"))
        assert client.finished(file_id, client.thumbnail(file_id)["id"])["status"] == "ready"
        after = wait_for(lambda: (now := pool()) and now != before and now, 30, "a new process")
        assert not set(before) & set(after)
