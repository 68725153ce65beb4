"""Rate limits for upload tokens, against a served API: each token has its own budget, every
token request also counts into its project's token budget, and a refusal reaches the page
as a key's would (429 RATE_LIMITED, Retry-After) with the CORS headers that let it read it.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.factories import make_actor, png_bytes, upload_body
from tests.helpers import within_one_window
from tests.servers import serve_api
from tests.uploads.tokens import PAGE

pytestmark = pytest.mark.django_db(transaction=True)

# Small budgets, so the test spends them: three writes a token, five for the project's tokens
# together (and five for the key, which tokens never spend).
SERVER_ENV = {
    "SERVICE_RATE_LIMIT_TOKEN_WRITES_PER_MINUTE": "3",
    "SERVICE_RATE_LIMIT_WRITES_PER_MINUTE": "5",
}


def start(base: str, token: str, origin: str = PAGE) -> requests.Response:
    return requests.post(
        f"{base}/v1/files/upload",
        json=upload_body(png_bytes()),
        headers={"Authorization": f"Bearer {token}", "Origin": origin},
        timeout=10,
    )


def test_a_token_past_its_budget_and_its_projects_answers_429_a_page_can_read() -> None:
    owner = make_actor("token-budgets")
    key = {"Authorization": f"Bearer {owner.key.raw_key}"}

    def mint(**bounds: Any) -> str:
        response = requests.post(f"{base}/v1/upload-tokens", json=bounds, headers=key, timeout=10)
        assert response.status_code == 201, response.text
        token: str = response.json()["data"]["token"]
        return token

    with serve_api(workers=1, **SERVER_ENV) as base:
        within_one_window(15)
        first = mint(maxFiles=10, allowedOrigins=[PAGE])
        second = mint(maxFiles=10)
        # Another origin is refused by authentication, before any budget counts: a forged
        # Origin cannot spend the page's budget.
        forged = [start(base, first, origin="https://evil.example") for _ in range(4)]
        first_statuses = [start(base, first).status_code for _ in range(3)]
        limited = start(base, first)
        # The first token's four requests (the refused one too) are counted into the
        # project's five: the second token has one left.
        second_statuses = [start(base, second).status_code for _ in range(2)]
        # The key has a budget of its own, which no token request spent (two mints so far).
        by_key = requests.post(
            f"{base}/v1/files/upload", json=upload_body(png_bytes()), headers=key, timeout=10
        )
        listed = requests.get(f"{base}/v1/files", headers=key, timeout=10)

    assert {response.status_code for response in forged} == {403}
    assert {response.json()["error"]["code"] for response in forged} == {"ORIGIN_NOT_ALLOWED"}
    assert first_statuses == [201, 201, 201]
    assert limited.status_code == 429, limited.text
    assert limited.json()["error"]["code"] == "RATE_LIMITED"
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    assert limited.headers["X-Request-Id"]
    # A page from an allowed origin can read the refusal and its wait.
    assert limited.headers["Access-Control-Allow-Origin"] == PAGE
    exposed = limited.headers["Access-Control-Expose-Headers"]
    assert "Retry-After" in exposed and "X-Request-Id" in exposed
    assert second_statuses == [201, 429]
    assert by_key.status_code == 201, by_key.text
    assert not any(name.lower().startswith("access-control-") for name in by_key.headers)
    # Nothing refused was written: three files from the first token, one from the second,
    # and the key's own.
    assert listed.status_code == 200
    assert len(listed.json()["data"]) == 3 + 1 + 1
