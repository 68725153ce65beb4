"""Transforms wait on a queue of their own, and one project's burst waits behind itself,
not in front of other projects' work."""

from __future__ import annotations

import pytest
from django.conf import settings

from storage_service.celery import app
from tests.helpers import wait_for
from tests.security.image_work.stack import Stack, StoreProxy, client_for
from tests.variants.images import encode, stripes
from variants.models import Variant

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# --- Queues ---------------------------------------------------------------------------------------


def test_transforms_have_a_queue_of_their_own(stack: Stack) -> None:
    """No worker runs: the thumbnail's message waits on the transforms' queue, and the sweeps'
    queue (Celery's default) stays empty, so a sweep never waits behind image work."""
    with stack.api() as base:
        client = client_for(base, "queues")
        client.upload(encode(stripes((300, 100)), "PNG"))
        assert stack.queued(stack.queues["transforms"]) == 1
        assert stack.queued(stack.queues["default"]) == 0
    # The sweeps go to Celery's default queue.
    for sweep in ("variants.tasks.requeue_stale_variants", "files.tasks.purge_deleted_files"):
        assert app.amqp.router.route({}, sweep)["queue"].name == settings.CELERY_TASK_DEFAULT_QUEUE


# --- Fairness between projects -------------------------------------------------------------------


def test_one_projects_burst_waits_behind_itself_not_in_front_of_others(stack: Stack) -> None:
    """Two worker processes; a project may run one transform at a time. Every read of an
    original takes a second (a slow store), so A's burst of seven would hold both processes
    for seconds. B's one thumbnail is made while most of A's still wait, and all of A's are
    made in the end."""
    limits = {
        "SERVICE_VARIANT_PROJECT_CONCURRENCY": "1",
        "SERVICE_VARIANT_DEFER_MAX_SECONDS": "2",
    }
    with StoreProxy(get_delay=1.0) as proxy, stack.api() as base:
        a = client_for(base, "burst-a")
        b = client_for(base, "quiet-b")
        a_file = a.upload(encode(stripes((300, 100)), "PNG"))
        for width in range(101, 107):
            assert a.transform(a_file, width=width).status_code == 202
        b_file = b.upload(encode(stripes((300, 100)), "PNG"))
        assert stack.queued(stack.queues["transforms"]) == 8  # A's seven, then B's one

        stack.worker({"AWS_S3_ENDPOINT_URL": proxy.url, **limits}, concurrency=2)
        b_thumb = b.finished(b_file, b.thumbnail(b_file)["id"])
        a_waiting = [v for v in a.variants(a_file) if v["status"] != "ready"]
        assert b_thumb["status"] == "ready"
        assert len(a_waiting) >= 4, f"B waited for A: only {len(a_waiting)} of A's still waited"

        # Nothing of A's is lost: every one is made, once.
        wait_for(lambda: all(v["status"] == "ready" for v in a.variants(a_file)), 90, "all of A's")
        assert all(v.attempts == 1 for v in Variant.objects.filter(file_id=a_file))
