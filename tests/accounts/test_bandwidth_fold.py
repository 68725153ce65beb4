"""The fold of the delivery redirects' bandwidth from Redis into the usage a project reads
(GET /v1/usage): each redirect's bytes counted exactly once, whichever step a fold dies at,
and one fold at a time."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.db import connection, transaction
from django.test import Client

from accounts import bandwidth
from accounts.bandwidth import bandwidth_fold
from tests.factories import Actor, png_bytes
from tests.helpers import at_once, open_in_another_session, uploaded_file

pytestmark = pytest.mark.django_db
browser = Client()
DATA = png_bytes()

# pytest-django's fixture: runs (or, execute=False, drops) the on_commit callbacks of its block.
OnCommit = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


class FoldDied(Exception):
    """Stands for a worker killed, or a database gone, before the fold's commit."""


def delivery_url(actor: Actor) -> str:
    assert actor.post("/v1/delivery-keys", {}).status_code == 201
    file = uploaded_file(actor, DATA)
    signed = actor.post(f"/v1/files/{file['id']}/delivery-url", {})
    assert signed.status_code == 200, signed.json()
    return str(signed.json()["url"])


def redirect(url: str, times: int = 1) -> None:
    path = urlsplit(url)
    for _ in range(times):
        assert browser.get(f"{path.path}?{path.query}").status_code == 302


def bandwidth_read(actor: Actor) -> int:
    response = actor.get("/v1/usage")
    assert response.status_code == 200
    return int(response.json()["data"]["bandwidth"]["bytes"])


def folds_left_in_redis() -> set[bytes | str]:
    return set(bandwidth.client().smembers(bandwidth.redis_key(bandwidth.FOLDS)))


def test_a_fold_counts_each_redirect_once_and_leaves_redis_clean(
    owner: Actor, django_capture_on_commit_callbacks: OnCommit
) -> None:
    url = delivery_url(owner)
    redirect(url, times=2)
    assert bandwidth_read(owner) == 0  # counted in Redis, not yet folded
    with django_capture_on_commit_callbacks(execute=True):
        bandwidth_fold()
    assert bandwidth_read(owner) == 2 * len(DATA)
    assert folds_left_in_redis() == set()
    with django_capture_on_commit_callbacks(execute=True):
        bandwidth_fold()  # nothing pending
    redirect(url)
    with django_capture_on_commit_callbacks(execute=True):
        bandwidth_fold()
    assert bandwidth_read(owner) == 3 * len(DATA)


def test_a_fold_that_died_before_committing_is_added_by_the_next(
    owner: Actor, django_capture_on_commit_callbacks: OnCommit
) -> None:
    url = delivery_url(owner)
    redirect(url)
    with pytest.raises(FoldDied), transaction.atomic():
        bandwidth_fold()  # took the pending counts into its own hash
        raise FoldDied
    assert bandwidth_read(owner) == 0
    redirect(url)  # counted anew while the dead fold's hash waits
    with django_capture_on_commit_callbacks(execute=True):
        bandwidth_fold()
    assert bandwidth_read(owner) == 2 * len(DATA)
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            bandwidth_fold()
    assert bandwidth_read(owner) == 2 * len(DATA)
    assert folds_left_in_redis() == set()


def test_a_fold_that_died_after_committing_is_not_added_again(
    owner: Actor, django_capture_on_commit_callbacks: OnCommit
) -> None:
    """The commit happened; the deletion of the folded hash (after it) never ran, as when the
    worker dies there or Redis fails: the next folds find the hash and must not add it."""
    url = delivery_url(owner)
    redirect(url, times=2)
    with django_capture_on_commit_callbacks(execute=False):
        bandwidth_fold()
    assert bandwidth_read(owner) == 2 * len(DATA)
    assert folds_left_in_redis()  # the spent hash is still there
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=False):
            bandwidth_fold()  # each dies before its deletion too
    assert bandwidth_read(owner) == 2 * len(DATA)
    redirect(url)
    with django_capture_on_commit_callbacks(execute=True):
        bandwidth_fold()
    assert bandwidth_read(owner) == 3 * len(DATA)
    assert folds_left_in_redis() == set()
    with django_capture_on_commit_callbacks(execute=True):
        bandwidth_fold()
    assert bandwidth_read(owner) == 3 * len(DATA)


def take_the_fold_lock() -> None:
    with connection.cursor() as cursor:
        cursor.execute(bandwidth.FOLD_LOCK)


def test_a_fold_while_another_runs_leaves_the_counts_to_it(
    owner: Actor, django_capture_on_commit_callbacks: OnCommit
) -> None:
    url = delivery_url(owner)
    redirect(url)
    # Another session holds the lock: a fold that beat started while the last one still runs.
    with (
        open_in_another_session(take_the_fold_lock),
        django_capture_on_commit_callbacks(execute=True),
    ):
        assert bandwidth_fold() == 0
    assert bandwidth_read(owner) == 0
    with django_capture_on_commit_callbacks(execute=True):
        assert bandwidth_fold() == 1
    assert bandwidth_read(owner) == len(DATA)


@pytest.mark.django_db(transaction=True)
def test_folds_started_at_once_count_each_redirect_once(owner: Actor) -> None:
    """Beat's folds overlapping, each in its own session and committing for real: whichever
    takes the lock folds, the others leave the counts to it."""
    url = delivery_url(owner)
    redirect(url, times=3)
    folded = at_once(*[bandwidth_fold] * 4)
    assert sorted(folded) == [0, 0, 0, 1], folded  # the one tenant-day, by one of them
    bandwidth_fold()  # a later fold finds nothing more to add
    assert bandwidth_read(owner) == 3 * len(DATA)
    redirect(url)
    at_once(*[bandwidth_fold] * 4)
    bandwidth_fold()
    assert bandwidth_read(owner) == 4 * len(DATA)
    assert folds_left_in_redis() == set()
