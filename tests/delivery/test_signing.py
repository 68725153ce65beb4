"""The guide's test vectors (tests/delivery/vectors.json), signed by the service's signer, and
the one spelling of a URL's options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from delivery import signing

VECTORS: dict[str, Any] = json.loads((Path(__file__).parent / "vectors.json").read_text())


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["path"].split("/")[4])
def test_the_service_signs_each_vector_as_the_guide_says(vector: dict[str, Any]) -> None:
    options = signing.Options(**vector["options"])
    path = signing.delivery_path(VECTORS["secret"], VECTORS["keyId"], VECTORS["fileId"], options)
    assert path == vector["path"]
    assert signing.parse_options(path.split("/")[4]) == options


@pytest.mark.parametrize(
    "text",
    [
        "height=300,width=400",  # out of order
        "width=400,width=400",
        "width=0400",
        "width=",
        "width=-1",
        "colour=red",
        "",
        "width=4e2",
    ],
)
def test_any_other_spelling_of_the_options_is_refused(text: str) -> None:
    with pytest.raises(signing.Malformed):
        signing.parse_options(text)


def test_a_changed_option_no_longer_matches_the_signature() -> None:
    vector = VECTORS["vectors"][1]
    given = vector["path"].rsplit("/", 1)[1]
    assert signing.signature_matches(
        VECTORS["secret"], VECTORS["keyId"], VECTORS["fileId"], "width=400", given
    )
    assert not signing.signature_matches(
        VECTORS["secret"], VECTORS["keyId"], VECTORS["fileId"], "width=401", given
    )
