"""Every field of every multipart endpoint, given every JSON type: a 4xx or a 2xx, never a 500."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import Actor
from tests.files.test_no_server_errors import ODD_VALUES
from tests.multipart import BASE, start_multipart

pytestmark = pytest.mark.django_db


START = {"filename": "a.bin", "contentType": "application/octet-stream", "size": 3}


@pytest.mark.parametrize("field", [*START, "path", "metadata"])
def test_odd_values_when_starting(owner: Actor, field: str) -> None:
    for value in ODD_VALUES:
        response = owner.post(BASE, {**START, field: value})
        assert response.status_code < 500, (field, value, response.content)


def test_odd_values_for_part_numbers_and_parts(owner: Actor) -> None:
    upload_id = start_multipart(owner, 3)["upload"]["id"]
    bodies: list[Any] = []
    for value in ODD_VALUES:
        bodies += [
            {"partNumbers": value},
            {"partNumbers": [value]},
            {"parts": value},
            {"parts": [value]},
            {"parts": [{"partNumber": value, "etag": "x"}]},
            {"parts": [{"partNumber": 1, "etag": value}]},
        ]
    for body in bodies:
        for action in ("parts", "complete"):
            response = owner.post(f"{BASE}/{upload_id}/{action}", body)
            assert response.status_code < 500, (action, body, response.content)


@pytest.mark.parametrize("body", [[], "x", 1, None, [{"partNumber": 1}]])
def test_bodies_that_are_not_objects(owner: Actor, body: Any) -> None:
    upload_id = start_multipart(owner, 3)["upload"]["id"]
    for url in (BASE, f"{BASE}/{upload_id}/parts", f"{BASE}/{upload_id}/complete"):
        response = owner.post(url, body)
        assert response.status_code < 500, (url, body, response.content)
