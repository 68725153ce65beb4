"""Counting a token's files is exact under concurrency: parallel starts never pass maxFiles."""

from __future__ import annotations

import pytest

from files.models import File
from tests.factories import Actor, png_bytes, upload_body
from tests.helpers import at_once, error_code
from tests.uploads.tokens import Page, mint
from uploads.models import UploadToken

pytestmark = pytest.mark.django_db(transaction=True)


def test_twenty_parallel_starts_against_max_files_ten_give_exactly_ten(owner: Actor) -> None:
    minted = mint(owner, maxFiles=10)
    body = upload_body(png_bytes())

    def start() -> tuple[int, str | None]:
        response = Page(minted["token"]).post("/v1/files/upload", body)
        return response.status_code, None if response.status_code == 201 else error_code(response)

    answers = at_once(*[start for _ in range(20)])

    assert sorted(answers, key=str) == sorted(
        [(201, None)] * 10 + [(403, "UPLOAD_TOKEN_EXHAUSTED")] * 10, key=str
    )
    assert File.objects.filter(project=owner.project).count() == 10
    assert UploadToken.objects.get(id=minted["uploadToken"]["id"]).files_started == 10


def test_parallel_multipart_starts_count_exactly_too(owner: Actor) -> None:
    minted = mint(owner, maxFiles=3)
    body = {"filename": "a.bin", "contentType": "application/octet-stream", "size": 100}

    def start() -> int:
        return int(Page(minted["token"]).post("/v1/uploads/multipart", body).status_code)

    answers = at_once(*[start for _ in range(8)])

    assert sorted(answers) == [201] * 3 + [403] * 5
    assert File.objects.filter(project=owner.project).count() == 3
