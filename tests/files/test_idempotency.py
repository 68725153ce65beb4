"""Idempotency-Key on POST /v1/files/upload."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from files.models import File, IdempotencyRecord
from files.services import files_expire_pending
from tests.factories import Actor
from tests.helpers import error_code

BODY = {"filename": "a.png", "contentType": "image/png", "size": 3}


def test_same_key_and_body_returns_the_same_file(owner: Actor) -> None:
    first = owner.post("/v1/files/upload", BODY, **{"Idempotency-Key": "k-1"})
    again = owner.post("/v1/files/upload", BODY, **{"Idempotency-Key": "k-1"})

    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json()["file"]["id"] == first.json()["file"]["id"]
    assert again.json()["upload"] == first.json()["upload"]
    assert again["Idempotent-Replayed"] == "true"
    assert File.objects.count() == 1


def test_same_key_with_another_body_is_refused(owner: Actor) -> None:
    owner.post("/v1/files/upload", BODY, **{"Idempotency-Key": "k-2"})
    response = owner.post("/v1/files/upload", {**BODY, "size": 4}, **{"Idempotency-Key": "k-2"})

    assert response.status_code == 409
    assert error_code(response) == "IDEMPOTENCY_KEY_REUSED"
    assert File.objects.count() == 1


def test_without_a_key_every_request_creates_a_file(owner: Actor) -> None:
    owner.post("/v1/files/upload", BODY)
    owner.post("/v1/files/upload", BODY)
    assert File.objects.count() == 2


def test_a_key_older_than_a_day_may_be_used_again(owner: Actor) -> None:
    owner.post("/v1/files/upload", BODY, **{"Idempotency-Key": "k-3"})
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))

    response = owner.post("/v1/files/upload", {**BODY, "size": 9}, **{"Idempotency-Key": "k-3"})

    assert response.status_code == 201
    assert File.objects.count() == 2


def test_a_malformed_key_is_refused(owner: Actor) -> None:
    response = owner.post("/v1/files/upload", BODY, **{"Idempotency-Key": "x" * 256})
    assert response.status_code == 400
    assert error_code(response) == "VALIDATION_ERROR"


def test_the_pending_sweep_forgets_keys_older_than_a_day(owner: Actor) -> None:
    owner.post("/v1/files/upload", BODY, **{"Idempotency-Key": "old"})
    owner.post("/v1/files/upload", BODY, **{"Idempotency-Key": "new"})
    IdempotencyRecord.objects.filter(key="old").update(
        created_at=timezone.now() - timedelta(hours=25)
    )

    files_expire_pending()

    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]
